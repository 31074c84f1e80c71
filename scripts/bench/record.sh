#!/usr/bin/env bash
# Sampler benchmark (BENCHMARKS.md, "Sampler"): the recorder's own CPU time per tick and its wake-up
# jitter at 10 ms and 1 ms, driven by the scripted GPU source (no GPU needed), with host sampling on.
# Baseline side by side: the reference sampler (nvml_trace.py; without pynvml it writes rows with
# empty GPU fields), whose period drifts because it sleeps after each sample.
# Usage: scripts/bench/record.sh [SECONDS]   (default 10)
# Env: FLINCH_REFERENCE=DIR, the folder holding nvml_trace.py (without it the baseline is skipped)
set -euo pipefail
cd "$(dirname "$0")/../.."
SECS="${1:-10}"
source scripts/reference.sh
REF=$(reference_optional nvml_trace.py)
cargo build --release -q -p flinch-trace
BIN=target/release/flinch-trace
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT
# Two GPUs, power refreshing every other tick (as NVML does at 10 ms).
printf 'gpus 2\n300.5,99,40,1980,61,1000,30000,0;80,0,0,345,40,500,1200,0\n300.5,99,40,1980,61,1000,30000,0;80,0,0,345,40,500,1200,0\n301.25,98,41,1980,61,1003,30000,4;80.5,0,0,345,40,501,1200,0\n' >"$TMP/gpu.script"

echo "machine: $(nproc) CPUs, $(uname -r), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)"
echo "duration per run: ${SECS} s"
printf '%-40s %7s %7s %9s %9s %9s %9s %9s %12s %12s\n' run ticks missed jit_p50us jit_p99us jit_maxus work_p50us work_p99us thr_cpu_us/t proc_cpu_us/t
for ms in 10 1; do
  out="$TMP/t$ms.csv"
  /usr/bin/time -f '%U %S' -o "$TMP/time$ms" "$BIN" record --scripted-gpu "$TMP/gpu.script" --no-rapl \
    --interval-ms "$ms" --seconds "$SECS" --out "$out" 2>"$TMP/err$ms" || { cat "$TMP/err$ms"; exit 1; }
  python3 - "$out.meta.json" "$TMP/time$ms" "flinch-trace record --interval-ms $ms" <<'PY'
import json, sys
h = json.load(open(sys.argv[1]))["health"]
u, s = map(float, open(sys.argv[2]).read().split()[-2:])
proc = (u + s) * 1e6 / h["ticks"]
print(f'{sys.argv[3]:<40} {h["ticks"]:>7} {h["missed_ticks"]:>7} {h["jitter_p50_us"]:>9.1f} {h["jitter_p99_us"]:>9.1f} {h["jitter_max_us"]:>9.1f} {h["tick_work_p50_us"]:>9.2f} {h["tick_work_p99_us"]:>9.2f} {h["sampler_cpu_us_per_tick"]:>12.2f} {proc:>12.2f}')
PY
done
# Floor: a C loop that only sleeps to absolute 1 ms / 10 ms deadlines (what any sampler pays to wake).
if command -v cc >/dev/null; then
  cat >"$TMP/floor.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <sys/resource.h>
int main(int argc, char **argv) {
  long iv = atol(argv[1]) * 1000000L; double secs = atof(argv[2]);
  struct timespec t0, d; clock_gettime(CLOCK_MONOTONIC, &t0);
  long n = (long)(secs * 1e9 / iv);
  for (long k = 1; k <= n; k++) {
    long ns = t0.tv_nsec + k * iv; d.tv_sec = t0.tv_sec + ns / 1000000000L; d.tv_nsec = ns % 1000000000L;
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &d, NULL);
  }
  struct rusage ru; getrusage(RUSAGE_SELF, &ru);
  double cpu = ru.ru_utime.tv_sec * 1e6 + ru.ru_utime.tv_usec + ru.ru_stime.tv_sec * 1e6 + ru.ru_stime.tv_usec;
  printf("%-40s %7ld %7s %9s %9s %9s %9s %9s %12s %12.2f\n", argv[3], n, "-", "-", "-", "-", "-", "-", "-", cpu / n);
  return 0;
}
C
  cc -O2 -o "$TMP/floor" "$TMP/floor.c"
  for ms in 10 1; do "$TMP/floor" "$ms" "$SECS" "floor: C sleep-only loop, ${ms} ms"; done
fi
if [ -n "$REF" ]; then
  for ms in 10 1; do
    out="$TMP/ref$ms.csv"
    /usr/bin/time -f '%U %S' -o "$TMP/rtime$ms" python3 "$REF" --out "$out" --no-rapl --interval-ms "$ms" --seconds "$SECS"
    python3 - "$out" "$TMP/rtime$ms" "$ms" "reference nvml_trace.py --interval-ms $ms" <<'PY'
import csv, sys
t = [int(r["t_mono_ns"]) for r in csv.DictReader(open(sys.argv[1])) if r["row_type"] == "SAMPLE"]
ms = float(sys.argv[3]); iv = ms * 1e6
# Lateness against the ideal grid t0 + k*interval, k = sample number: the reference's drift.
late = sorted((x - (t[0] + k * iv)) / 1e3 for k, x in enumerate(t))
q = lambda p: late[min(len(late) - 1, max(0, int(p * len(late) + 0.999999) - 1))]
u, s = map(float, open(sys.argv[2]).read().split()[-2:])
expected = int(float(sys.argv[5]) * 1e3 / ms) if len(sys.argv) > 5 else None
print(f'{sys.argv[4]:<40} {len(t):>7} {"-":>7} {q(0.5):>9.1f} {q(0.99):>9.1f} {late[-1]:>9.1f} {"-":>9} {"-":>9} {"-":>12} {(u+s)*1e6/len(t):>12.2f}')
PY
  done
  echo "(reference: jitter = lateness against the grid t0 + k*interval, which grows with its drift)"
else
  echo "reference sampler not found at $REF: baseline skipped"
fi
