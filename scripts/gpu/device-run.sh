#!/usr/bin/env bash
# The real-hardware session for a GPU host that has no Rust toolchain: the binary is built elsewhere
# (`cargo build --release -p flinch-trace`) and copied with the tree. It runs, in one go:
#   1. scripts/gpu/check.sh (record a PyTorch load with a deliberate pause; verdicts; NVML counter vs
#      trapezoid energy; parity of `analyze` with the reference analyze_trace.py when REF is given);
#   2. the reference sampler nvml_trace.py side by side with the same recording (when $FLINCH_REFERENCE holds it),
#      compared by scripts/gpu/compare-samplers.py: samples, interval jitter, and energy over the same windows;
#   3. a 1 ms recording of the idle GPU (NVML latency and missed ticks at a high rate, from the sidecar);
#   4. scripts/gpu/join-check.sh (a profiled PyTorch loop with a host pause, joined with its recording);
#   5. `record --metrics` as a daemon on the real GPU: the NVML-counter energy series rises between scrapes;
#   6. with BENCH_THREADS=1: the many-core curve, scripts/bench/threads.sh on a 1 GB trace at 1-16 threads
#      beside cat and rapidgzip (GEN_TRACE: the carried generator, target/release/examples/gen_trace;
#      rapidgzip from wheels carried in target/wheels, installed without an index, when present).
# Usage: FLINCH_REFERENCE=dir/with/reference/tools scripts/gpu/device-run.sh OUT_DIR
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${1:?usage: scripts/gpu/device-run.sh OUT_DIR}
mkdir -p "$OUT"
BIN=${FLINCH_BIN:-target/release/flinch-trace}
source scripts/reference.sh
REF_SAMPLER=$(reference_optional nvml_trace.py)
echo "== host: $(uname -srm); $(nproc) cpus"
nvidia-smi --query-gpu=index,name,driver_version,power.draw,power.limit,clocks.sm --format=csv || true
"$BIN" --version

REFPID=""
if [ -n "$REF_SAMPLER" ]; then
  echo "== reference sampler nvml_trace.py in the background (45 s, 10 ms, no RAPL)"
  python3 "$REF_SAMPLER" --out "$OUT/reference-sampler.csv" --seconds 45 --interval-ms 10 --no-rapl \
    >"$OUT/reference-sampler.log" 2>&1 &
  REFPID=$!
  sleep 2
fi

echo "== gpu-check"
FLINCH_BIN="$BIN" scripts/gpu/check.sh "$OUT/check"
CHECK_RC=$?
echo "gpu-check exit: $CHECK_RC"

echo "== 1 ms recording of the idle GPU, 3 s"
"$BIN" record --interval-ms 1 --seconds 3 --no-rapl --out "$OUT/fast.csv" --require-gpu
python3 -c "import json,sys; m=json.load(open(sys.argv[1])); print(json.dumps(m['health']))" "$OUT/fast.csv.meta.json"

if [ -n "$REFPID" ]; then
  wait "$REFPID"
  echo "reference sampler exit: $?"
  python3 scripts/gpu/compare-samplers.py "$OUT/check/trace.csv" "$OUT/reference-sampler.csv" || true
fi
echo "== gpu-join-check (a profiled PyTorch loop joined with its recording)"
FLINCH_BIN="$BIN" scripts/gpu/join-check.sh "$OUT/join"
JOIN_RC=$?
echo "gpu-join-check exit: $JOIN_RC"
[ "$CHECK_RC" = 0 ] && CHECK_RC=$JOIN_RC
echo "== record --metrics on the real GPU (NVML energy counter source, scraped twice 3 s apart)"
"$BIN" record --metrics 127.0.0.1:9464 --require-gpu --no-rapl -- python3 scripts/gpu/load.py \
  --compute-s 3 --pause-s 1 >"$OUT/metrics-record.log" 2>&1 &
MPID=$!
sleep 3
curl -s -H 'Accept: text/plain' http://127.0.0.1:9464/metrics >"$OUT/metrics-1.txt"
sleep 3
curl -s -H 'Accept: text/plain' http://127.0.0.1:9464/metrics >"$OUT/metrics-2.txt"
wait "$MPID"
python3 - "$OUT" <<'PY' || CHECK_RC=1
import re, sys
out = sys.argv[1]
def energy(path):
    got = {}
    for line in open(path):
        m = re.match(r'flinch_gpu_energy_joules_total\{(.*)\} (\S+)', line)
        if m:
            got[m.group(1)] = float(m.group(2))
    return got
a, b = energy(f"{out}/metrics-1.txt"), energy(f"{out}/metrics-2.txt")
print("energy series:", b)
ok = bool(b) and all(b[k] > a.get(k, 0) for k in b) and any('source="counter"' in k for k in b)
watts = {k: (b[k] - a.get(k, 0)) / 3 for k in b}
print("mean power over the 3 s between scrapes (W):", watts)
print("metrics check:", "passed" if ok else "FAILED (expected a rising counter-sourced series)")
sys.exit(0 if ok else 1)
PY
"$BIN" analyze --csv "$OUT/check/trace.csv" --json >"$OUT/check/recording.json"
echo "== analyze --spans of the check recording"
"$BIN" analyze --csv "$OUT/check/trace.csv" --spans || true
if [ "${BENCH_THREADS:-0}" = 1 ]; then
  echo "== thread scaling (scripts/bench/threads.sh 1000)"
  RGZ=""
  if ls target/wheels/rapidgzip-*.whl >/dev/null 2>&1; then
    python3 -m venv "$OUT/rgz-env" && "$OUT/rgz-env/bin/pip" install -q --no-index --find-links target/wheels rapidgzip \
      && RGZ="$OUT/rgz-env/bin/rapidgzip"
  fi
  FLINCH_BIN="$BIN" GEN_TRACE="${GEN_TRACE:-target/release/examples/gen_trace}" RAPIDGZIP="$RGZ" \
    BENCH_DATA="$OUT/bench-data" scripts/bench/threads.sh 1000 | tee "$OUT/threads.md" || CHECK_RC=1
  rm -rf "$OUT/bench-data"
fi
exit "$CHECK_RC"
