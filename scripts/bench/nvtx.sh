#!/usr/bin/env bash
# NVTX injection cost (BENCHMARKS.md, "NVTX injection"): ns per nvtxRangePushA + nvtxRangePop in the
# C client (nvtx/tests/clients/nvtx_client.c), without a tool attached (NVTX's no-op path, the
# baseline) and with libflinch_nvtx.so under `flinch-trace record`, single thread and four threads.
# Each run does N pairs in all, split over the threads (small enough that the lines fit the library's
# buffer, so the figure is the caller's cost, not the drop path; the injected runs check that nothing
# was dropped); five runs each. Figures: wall ns per pair per thread, and the threads' CPU ns per pair
# (CLOCK_THREAD_CPUTIME_ID, which a loaded machine inflates less).
# Needs scripts/setup.sh (the nvidia-nvtx headers in target/nvtx-env) and gcc.
# Usage: [FLINCH_BIN=...] scripts/bench/nvtx.sh [N]   (default 40000)
set -euo pipefail
cd "$(dirname "$0")/../.."
N="${1:-40000}"
ENV="${FLINCH_NVTX_ENV:-target/nvtx-env}"
INC=$("$ENV/bin/python" -c "import pathlib, nvidia; print(next(p.parent.parent for d in nvidia.__path__ for p in pathlib.Path(d).rglob('nvtx3/nvToolsExt.h')))")
# FLINCH_BIN: a recorder binary to use as it is (e.g. one beside another build of the library, to
# compare builds); by default the release build of this tree.
if [ -n "${FLINCH_BIN:-}" ]; then
  BIN="$FLINCH_BIN"
else
  cargo build --release -q -p flinch-trace -p flinch-nvtx
  BIN=target/release/flinch-trace
fi
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
gcc -O2 -I"$INC" -o "$TMP/client" nvtx/tests/clients/nvtx_client.c -ldl -lpthread
printf 'gpus 1\n100,50,10,1500,50,1000,100,0\n' >"$TMP/gpu.script"
echo "machine: $(nproc) CPUs, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "pairs per run: $N"
for threads in 1 4; do
  for mode in baseline injected; do
    runs=()
    cpus=()
    per=$((N / threads))
    for i in 1 2 3 4 5; do
      if [ "$mode" = baseline ]; then
        r=$(env -u NVTX_INJECTION64_PATH "$TMP/client" bench "$per" "$threads")
      else
        r=$("$BIN" record --scripted-gpu "$TMP/gpu.script" --no-rapl --no-host --out "$TMP/t$i.csv" \
          -- "$TMP/client" bench "$per" "$threads" 2>"$TMP/err")
        d=$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['nvtx']['dropped'])" "$TMP/t$i.csv.meta.json")
        [ "$d" = 0 ] || { echo "run dropped $d marks"; cat "$TMP/err"; exit 1; }
      fi
      runs+=("$(echo "$r" | awk '{print $2}')")
      cpus+=("$(echo "$r" | awk '{print $4}')")
    done
    printf '%-9s threads=%d  wall ns per push+pop: %-40s cpu ns per push+pop: %s\n' "$mode" "$threads" "${runs[*]}" "${cpus[*]}"
  done
done
