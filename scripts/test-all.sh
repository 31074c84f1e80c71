#!/usr/bin/env bash
# The single test command: installs what it needs (scripts/setup.sh), then runs every check.
# Fails when anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TERM_COLOR=never

scripts/setup.sh --browser --torch

step() { printf '\n== test: %s\n' "$*"; }

step "cargo fmt --check"
cargo fmt --all --check

step "cargo clippy (all targets, -D warnings)"
cargo clippy --workspace --all-targets -- -D warnings

step "cargo test (workspace)"
# The NVTX tests load libflinch_nvtx.so from beside the binary; `cargo test` builds only the test harness of
# a cdylib crate, so the library itself is built first.
cargo build -p flinch-nvtx
cargo test --workspace

step "flinch-core without alloc for thumbv7em-none-eabihf (proves no_std, no allocator)"
cargo build -p flinch-core --no-default-features --target thumbv7em-none-eabihf

step "firmware (embedded/, its own workspace): fmt, clippy -D warnings, the image vs native analyze under QEMU"
(cd embedded && cargo fmt --check && cargo clippy --release --locked --target thumbv7em-none-eabihf -- -D warnings)
tests/embedded/run.sh

step "flinch-core with alloc for wasm32-unknown-unknown"
cargo build -p flinch-core --target wasm32-unknown-unknown

step "fuzz targets: build, then run each for a few seconds (scripts/dev/fuzz.sh)"
scripts/dev/fuzz.sh "${FLINCH_FUZZ_SECONDS:-5}"

step "real-hardware scripts, dry runs (no GPU: scripted source; the plumbing, not the physics)"
cargo build -p flinch-trace
FLINCH_BIN=target/debug/flinch-trace scripts/gpu/check.sh --dry-run target/dry-gpu-check
FLINCH_BIN=target/debug/flinch-trace scripts/gpu/join-check.sh --dry-run target/dry-gpu-join
# The thread-scaling script of the device run, on a small trace at 1 and 2 threads (its output check).
cargo build -p flinch-trace --example gen_trace
BENCH_RUNS=1 BENCH_DATA=target/dry-threads FLINCH_BIN=target/debug/flinch-trace GEN_TRACE=target/debug/examples/gen_trace \
    RAPIDGZIP="" scripts/bench/threads.sh 20 1 2

step "web: the page's wasm (scripts/dev/build-web.sh)"
scripts/dev/build-web.sh

step "browser tests: the page in Chromium through playwright-core (tests/browser)"
cargo build -p flinch-trace
(cd tests/browser && npm test)

step "Python wheel: pip install ./python into target/py-env (maturin from the registry), then pytest python/tests"
# The parity tests compare the wheel with this binary's output (docs/python.md, "Tests").
cargo build -p flinch-trace
target/py-env/bin/pip install -q --disable-pip-version-check --force-reinstall --no-deps ./python
FLINCH_TRACE_BIN=target/debug/flinch-trace target/py-env/bin/python -m pytest -q -p no:cacheprovider python/tests
# And in a fresh virtual environment: nothing but pip, which fetches the build backend itself.
python/tests/fresh_venv.sh target/debug/flinch-trace

step "real PyTorch (CPU, target/torch-env): trace --steps against a naive oracle on fresh and kept traces; record --torch-profile"
cargo build -p flinch-trace
FLINCH_BIN=target/debug/flinch-trace tests/torch/run.sh
cargo build -p flinch-py # the Python API part of record_profile.sh loads target/debug/lib_native.so
FLINCH_BIN=target/debug/flinch-trace tests/torch/record_profile.sh

step "Prometheus scrapes record --metrics (tests/record/prometheus.sh; skipped loudly without prometheus unless CI=true)"
cargo build -p flinch-trace
tests/record/prometheus.sh

step "adversarial scripts (tests/robustness: FIFOs, pipes, signals during writes, a full tmpfs, hard links, many ranks)"
cargo build -p flinch-trace
FLINCH_BIN=target/debug/flinch-trace tests/robustness/run.sh

echo
echo "test-all: every check passed"
