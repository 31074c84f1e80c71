#!/usr/bin/env bash
# The main job, on a fresh machine and without a GPU: build flinch-trace, then analyze
#   1. a real recording made by `flinch-trace record` (examples/host-only: a machine without a GPU, so the GPU
#      columns are empty and only the spans between marks are measured),
#   2. a real PyTorch (Kineto) GPU trace (HolisticTraceAnalysis rank-0, MIT licence, tests/traces/),
#   3. a deterministic scripted-GPU recording (tests/record/golden.csv: synthetic, not hardware) to show the
#      compute / waiting verdict on a 200 ms pause.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

cargo build --release -q -p flinch-trace
ft=target/release/flinch-trace

say "1. A real recording (host-only: no GPU on the machine that made it), every span between its marks"
$ft analyze --csv examples/host-only/trace.csv --spans
say "   the same, for one window, in the reference analyze_trace.py's three lines"
$ft analyze --csv examples/host-only/trace.csv --start sleep_start --end sleep_end

say "2. A real Kineto GPU trace: busy time per category as an interval union (overlaps count once)"
$ft trace --top 12 tests/traces/HolisticTraceAnalysis/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz

say "3. Compute or waiting? A scripted-GPU recording (synthetic) with a 200 ms pause between marks"
$ft analyze --csv tests/record/golden.csv --spans
say "   the pause window, reference three lines"
$ft analyze --csv tests/record/golden.csv --start pause_start --end pause_end
say "   the pause window as JSON: the verdict and its evidence"
$ft analyze --csv tests/record/golden.csv --start pause_start --end pause_end --json \
  | python3 -c 'import json,sys; d=json.load(sys.stdin); w=d["window"]; print(json.dumps({k: w[k] for k in ("duration_s", "total", "verdict") if k in w}, indent=2))'
