#!/usr/bin/env bash
# The main job, on a fresh machine and without a GPU: build flinch-trace, then analyze
#   1. a real recording made by `flinch-trace record` on an NVIDIA H200 (examples/h200: PyTorch matrix
#      products, a 2 s sleep between marks, matrix products again): compute or waiting, and the energy,
#   2. a real PyTorch (Kineto) GPU trace (HolisticTraceAnalysis rank-0, MIT licence, tests/traces/),
#   3. a real recording from a machine without a GPU (examples/host-only: the GPU columns are empty, only the
#      spans between marks are measured),
#   4. a real PyTorch CPU training loop recorded and profiled by `record --torch-profile` (examples/torch-cpu,
#      made without a GPU: the step view's host parts, no energy): where each step's time went, the slow steps.
set -euo pipefail
cd "$(dirname "$0")/.."
say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

cargo build --release -q -p flinch-trace
ft=target/release/flinch-trace

say "1. A real recording on an NVIDIA H200 (examples/h200): every span between its marks"
$ft analyze --csv examples/h200/trace.csv --spans
say "   the 2 s sleep between the two compute phases, in the reference analyze_trace.py's three lines"
$ft analyze --csv examples/h200/trace.csv --start pause_start --end pause_end
say "   the same window as JSON: the verdict and its evidence, the energies side by side"
$ft analyze --csv examples/h200/trace.csv --start pause_start --end pause_end --json \
  | python3 -c 'import json,sys; d=json.load(sys.stdin); w=d["window"]; print(json.dumps({k: w[k] for k in ("duration_s", "total", "verdict") if k in w}, indent=2))'

say "2. A real Kineto GPU trace: busy time per category as an interval union (overlaps count once)"
$ft trace --top 12 tests/traces/HolisticTraceAnalysis/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz

say "3. A real recording from a machine without a GPU (examples/host-only): the spans between its marks"
$ft analyze --csv examples/host-only/trace.csv --spans

say "4. A real PyTorch CPU run under record --torch-profile (examples/torch-cpu; made without a GPU, so no energy)"
$ft trace --top 5 examples/torch-cpu/trace.torch.json.gz --telemetry examples/torch-cpu/trace.csv --steps
