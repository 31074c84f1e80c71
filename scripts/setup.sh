#!/usr/bin/env bash
# Installs what the tests need on a fresh machine. Idempotent: each step is skipped when done.
# Usage: scripts/setup.sh [--browser] [--bench] [--torch]   (--browser adds wasm-bindgen-cli, Chromium and npm
#        packages; --bench adds pigz for scripts/bench/trace.sh; --torch adds the PyTorch venv of tests/torch/run.sh)
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== setup: %s\n' "$*"; }

step "rust targets and components"
rustup target add wasm32-unknown-unknown thumbv7em-none-eabihf >/dev/null
rustup component add rustfmt clippy >/dev/null 2>&1 || true

step "nightly toolchain and cargo-fuzz 0.13.2 (fuzz targets, scripts/dev/fuzz.sh)"
rustup toolchain list | grep -q '^nightly' || rustup toolchain install nightly --profile minimal
if [[ $(cargo fuzz --version 2>/dev/null) != *" 0.13.2"* ]]; then
    cargo install cargo-fuzz --version 0.13.2 --locked
fi

step "NVTX test clients: gcc, and a venv at target/nvtx-env with nvtx and nvidia-nvtx (native/tests/nvtx_cli.rs)"
NVTX_ENV="${FLINCH_NVTX_ENV:-target/nvtx-env}"
if ! command -v gcc >/dev/null; then
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends gcc libc6-dev
fi
if "$NVTX_ENV/bin/python" -c 'import nvtx, nvidia, pathlib; next(p for d in nvidia.__path__ for p in pathlib.Path(d).rglob("nvtx3/nvToolsExt.h"))' 2>/dev/null; then
  echo "present: $NVTX_ENV ($("$NVTX_ENV/bin/pip" list 2>/dev/null | grep -i nvtx | xargs))"
else
  if ! python3 -m venv --clear "$NVTX_ENV"; then
    sudo=""
    [[ $(id -u) -ne 0 ]] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-venv
    python3 -m venv --clear "$NVTX_ENV"
  fi
  "$NVTX_ENV/bin/pip" install -q --disable-pip-version-check nvtx==0.2.17 nvidia-nvtx==13.5.25
fi

step "Python wheel tests: a venv at target/py-env with pytest, dask[bag], distributed, ray and pandas (python/tests, docs/python.md)"
PY_ENV="${FLINCH_PY_ENV:-target/py-env}"
PY_PINS=(pytest==9.2.0 "dask[bag]==2026.8.0" distributed==2026.8.0 ray==2.60.0 pandas==3.1.1)
if "$PY_ENV/bin/python" -c 'import pytest, dask.bag, distributed, ray, pandas' 2>/dev/null; then
  echo "present: $PY_ENV ($("$PY_ENV/bin/pip" list 2>/dev/null | grep -iE '^(pytest|dask|distributed|ray|pandas) ' | xargs))"
else
  if ! python3 -m venv --clear "$PY_ENV"; then
    sudo=""
    [[ $(id -u) -ne 0 ]] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends python3-venv
    python3 -m venv --clear "$PY_ENV"
  fi
  "$PY_ENV/bin/pip" install -q --disable-pip-version-check "${PY_PINS[@]}"
fi

# --- browser: wasm-bindgen-cli, Chromium, npm packages (the web helper's section) -------------------------
if [[ " $* " == *" --browser "* ]]; then
  WASM_BINDGEN_VERSION=0.2.130
  step "wasm-bindgen-cli $WASM_BINDGEN_VERSION"
  if wasm-bindgen --version 2>/dev/null | grep -qx "wasm-bindgen $WASM_BINDGEN_VERSION"; then
    echo "present: $(command -v wasm-bindgen)"
  else
    # `cargo install --locked` of the published crate fails here (its lockfile pins webpki-roots 1.0.11,
    # which the registry lacks): fetch the crate source, pin webpki-roots 1.0.10, install --locked from it.
    work=$(mktemp -d)
    mkdir -p "$work/fetch/src"
    printf '[package]\nname = "fetch"\nversion = "0.0.0"\nedition = "2021"\n[dependencies]\nwasm-bindgen-cli = "=%s"\n' \
      "$WASM_BINDGEN_VERSION" > "$work/fetch/Cargo.toml"
    echo 'fn main() {}' > "$work/fetch/src/main.rs"
    (cd "$work/fetch" && cargo fetch -q)
    crate=$(ls "${CARGO_HOME:-$HOME/.cargo}"/registry/cache/*/wasm-bindgen-cli-$WASM_BINDGEN_VERSION.crate | head -n1)
    tar xzf "$crate" -C "$work"
    src="$work/wasm-bindgen-cli-$WASM_BINDGEN_VERSION"
    if (cd "$src" && cargo update -q -p webpki-roots@1.0.11 --precise 1.0.10); then
      CARGO_TARGET_DIR="$work/target" cargo install -q --path "$src" --locked
    else
      CARGO_TARGET_DIR="$work/target" cargo install -q wasm-bindgen-cli --version "$WASM_BINDGEN_VERSION"
    fi
    rm -rf "$work"
    wasm-bindgen --version
  fi

  step "Chromium (system package; never a downloaded browser)"
  if [[ -x /usr/bin/chromium ]]; then
    echo "present: $(/usr/bin/chromium --version 2>/dev/null | tail -n1)"
  else
    sudo=""
    [[ $(id -u) -ne 0 ]] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends chromium chromium-driver
  fi

  step "npm packages for the browser tests (playwright-core, binaryen's wasm-opt)"
  if node -e 'const l=require("./tests/browser/package-lock.json").packages;
      for (const p of ["playwright-core","binaryen"]) {
        const v=require("./tests/browser/node_modules/"+p+"/package.json").version;
        if (v!==l["node_modules/"+p].version) process.exit(1) }' 2>/dev/null; then
    echo "present: tests/browser/node_modules matches package-lock.json"
  else
    (cd tests/browser && npm ci --no-audit --no-fund)
  fi
fi

if [[ " $* " == *" --bench "* ]]; then
  step "pigz (the decompression baseline of scripts/bench/trace.sh)"
  if command -v pigz >/dev/null; then
    echo "present: $(pigz --version 2>&1)"
  else
    sudo=""
    [[ $(id -u) -ne 0 ]] && sudo="sudo"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends pigz
  fi
fi

if [[ " $* " == *" --torch "* ]]; then
  step "PyTorch venv at ${FLINCH_TORCH_ENV:-target/torch-env} for the real-PyTorch step tests (tests/torch/run.sh): pip install torch, about 5 GB"
  scripts/dev/torch-env.sh "${FLINCH_TORCH_ENV:-target/torch-env}"
fi

# --- firmware: QEMU for the Cortex-M4 image (embedded/, scripts/dev/embedded.sh) ------------------------------
step "qemu-system-arm (runs the flinch-mcu image on mps2-an386)"
if qemu-system-arm -machine help 2>/dev/null | grep -q '^mps2-an386 '; then
  echo "present: $(qemu-system-arm --version | head -n1)"
else
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends qemu-system-arm
fi

step "prometheus and promtool (Debian's prometheus package: tests/record/prometheus.sh scrapes record --metrics)"
if command -v prometheus >/dev/null && command -v promtool >/dev/null; then
  echo "present: $(prometheus --version 2>&1 | head -n1)"
else
  sudo=""
  [[ $(id -u) -ne 0 ]] && sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends prometheus
fi
