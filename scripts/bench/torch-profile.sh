#!/usr/bin/env bash
# Overhead of `record --torch-profile` (docs/torch-profile.md, "Overhead"): the iteration time of one
# fixed CPU training loop (torch-loop.py, 1 torch thread) run
#   none     : alone;
#   record   : under `record` alone, sampling every 10 ms (no GPU here, RAPL off: the host alone);
#   outside  : under `record --torch-profile=100000,0,1` (the profiler started and stepped on every
#              optimizer step, but never past its wait phase);
#   inside   : under `record --torch-profile=0,0,100000` (every measured iteration in the active window).
# ROUNDS rounds (default 5), the configurations interleaved; prints each run's medians (wall and the loop's
# thread CPU time per step) and, per configuration, the median over rounds and the per-round ratio to the loop
# alone, with the machine's load before and after.
# Then, in one process (torch-loop.py --ab-recorder), `record` alone against the same recorder frozen by
# SIGSTOP, AB_PAIRS pairs of 50-iteration blocks (default 300; 0 skips it): the median on/off ratio with its 95 %
# interval, the figure that can resolve the 0.5 % goal (between-process spread is several % here).
# Env: FLINCH_BIN (default target/debug/flinch-trace; a release build is the fair one), FLINCH_TORCH_ENV
# (default target/torch-env), ROUNDS, STEPS (default 300), PIN (1: recorder and loop on CPUs of their own), AB_PAIRS.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN="${FLINCH_BIN:-target/debug/flinch-trace}"
PY="${FLINCH_TORCH_ENV:-target/torch-env}/bin/python"
ROUNDS="${ROUNDS:-5}"
STEPS="${STEPS:-300}"
LOOP="scripts/bench/torch-loop.py"
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT

echo "machine: $(nproc) CPUs; load before: $(cut -d' ' -f1-3 /proc/loadavg); binary: $BIN; PIN=${PIN:-0}"
# PIN=1: the recorder on CPU 0 and the loop on CPU 1 (a GPU host has cores to spare for the recorder; this
# 2-core VM has one); otherwise both float.
rec_pin=() loop_pin=()
if [[ "${PIN:-0}" == 1 ]]; then rec_pin=(taskset -c 0); loop_pin=(taskset -c 1); fi
run() {
  local cfg=$1 out="$work/$1"
  case $cfg in
    none) "${loop_pin[@]}" "$PY" "$LOOP" --steps "$STEPS" ;;
    record) "${rec_pin[@]}" "$BIN" record --no-rapl --interval-ms 10 --out "$out.csv" -- \
              "${loop_pin[@]}" "$PY" "$LOOP" --steps "$STEPS" 2>/dev/null ;;
    outside) "${rec_pin[@]}" "$BIN" record --no-rapl --interval-ms 10 --torch-profile=100000,0,1 --no-report \
               --out "$out.csv" -- "${loop_pin[@]}" "$PY" "$LOOP" --steps "$STEPS" 2>/dev/null ;;
    inside) "${rec_pin[@]}" "$BIN" record --no-rapl --interval-ms 10 --torch-profile=0,0,100000 --no-report \
              --out "$out.csv" -- "${loop_pin[@]}" "$PY" "$LOOP" --steps "$STEPS" 2>/dev/null ;;
  esac
}
: >"$work/rounds.jsonl"
for r in $(seq "$ROUNDS"); do
  for cfg in none record outside inside; do
    line=$(run $cfg | tail -n 1)
    printf '{"round": %d, "cfg": "%s", "res": %s}\n' "$r" "$cfg" "$line" >>"$work/rounds.jsonl"
    printf 'round %d %-8s %s\n' "$r" "$cfg" "$line"
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
# Per configuration: the median over rounds of each run's median wall and thread-CPU time per step, and the
# per-round ratio to the loop alone in the same round (median, min, max), since rounds differ in load.
"$PY" - "$work/rounds.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
by = {}
for r in rows:
    by.setdefault(r["cfg"], {})[r["round"]] = r["res"]
for key, label in (("median_ms", "wall"), ("median_cpu_ms", "thread CPU")):
    for cfg in ("none", "record", "outside", "inside"):
        runs = by[cfg]
        mm = statistics.median(v[key] for v in runs.values())
        ratios = sorted(runs[k][key] / by["none"][k][key] for k in runs)
        print(f"{label:<10} {cfg:<8} median of medians {mm:.4f} ms  ratio to none: median {statistics.median(ratios):.4f}"
              f" (rounds {ratios[0]:.4f}-{ratios[-1]:.4f})")
PY
if [[ "${AB_PAIRS:-300}" != 0 ]]; then
  rec=("$BIN")
  [[ "${PIN:-0}" == 1 ]] && rec=(taskset -c 0 "$BIN")
  echo "record alone, in-process A/B (${AB_PAIRS:-300} pairs of 50 iterations, sampling vs SIGSTOP):"
  "${loop_pin[@]}" "$PY" "$LOOP" --ab-recorder "${rec[*]}" --ab-pairs "${AB_PAIRS:-300}" --ab-block 50
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
fi
