#!/usr/bin/env bash
# Overhead of `record --torch-profile` (docs/torch-profile.md, "Overhead"): the iteration time of one
# fixed CPU training loop (torch-loop.py, 1 torch thread) run
#   none     : alone;
#   record   : under `record` alone, sampling every 10 ms (no GPU here: host and RAPL only);
#   outside  : under `record --torch-profile=100000,0,1` (the profiler started and stepped on every
#              optimizer step, but never past its wait phase);
#   inside   : under `record --torch-profile=0,0,100000` (every measured iteration in the active window).
# ROUNDS rounds (default 5), the configurations interleaved; prints each run's median and the median of
# the medians per configuration, with the machine's load before and after.
# Env: FLINCH_BIN (default target/debug/flinch-trace; a release build is the fair one), FLINCH_TORCH_ENV
# (default target/torch-env), ROUNDS, STEPS (default 300).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN="${FLINCH_BIN:-target/debug/flinch-trace}"
PY="${FLINCH_TORCH_ENV:-target/torch-env}/bin/python"
ROUNDS="${ROUNDS:-5}"
STEPS="${STEPS:-300}"
LOOP="scripts/bench/torch-loop.py"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

echo "machine: $(nproc) CPUs; load before: $(cut -d' ' -f1-3 /proc/loadavg); binary: $BIN"
run() {
  local cfg=$1 out="$work/$1"
  case $cfg in
    none) "$PY" "$LOOP" --steps "$STEPS" ;;
    record) "$BIN" record --no-rapl --interval-ms 10 --out "$out.csv" -- "$PY" "$LOOP" --steps "$STEPS" 2>/dev/null ;;
    outside) "$BIN" record --no-rapl --interval-ms 10 --torch-profile=100000,0,1 --no-report --out "$out.csv" -- \
               "$PY" "$LOOP" --steps "$STEPS" 2>/dev/null ;;
    inside) "$BIN" record --no-rapl --interval-ms 10 --torch-profile=0,0,100000 --no-report --out "$out.csv" -- \
              "$PY" "$LOOP" --steps "$STEPS" 2>/dev/null ;;
  esac
}
declare -A med
for r in $(seq "$ROUNDS"); do
  for cfg in none record outside inside; do
    m=$(run $cfg | "$PY" -c 'import json,sys; print(json.loads(sys.stdin.read().strip().splitlines()[-1])["median_ms"])')
    med[$cfg]="${med[$cfg]:-} $m"
    printf 'round %d %-8s median %.4f ms\n' "$r" "$cfg" "$m"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
base=""
for cfg in none record outside inside; do
  mm=$(printf '%s\n' ${med[$cfg]} | sort -g | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}')
  [[ -n "$base" ]] || base=$mm
  awk -v c="$cfg" -v m="$mm" -v b="$base" 'BEGIN {printf "%-8s median of medians %.4f ms  (%+.2f %% vs none)\n", c, m, 100*(m-b)/b}'
done
