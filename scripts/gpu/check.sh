#!/usr/bin/env bash
# Checks `flinch-trace record` on a real NVIDIA host: records ~10 s of a GPU load (PyTorch or CuPy,
# scripts/gpu/load.py) with a deliberate 2 s sleep pause between two marks, then checks that
#   1. the verdict of the pause window is "waiting" and of the compute windows "compute";
#   2. NVML counter energy and the edge-interpolated trapezoid agree within TOL (default 10%) over
#      each 3 s compute window and over the whole command (cmd_start..cmd_end). The counter updates
#      every ~10-100 ms (±1 period per edge) and the power sensor sees ~25% of the runtime on
#      A100/H100 (SC24, arXiv 2312.02741), so a few percent is expected; 10% flags a real fault;
#   3. `flinch-trace analyze` prints what the reference analyze_trace.py prints (when it is found).
# Usage: scripts/gpu/check.sh [OUT_DIR]      (default gpu-check-out/; TOL=0.10; GPU=0)
#        FLINCH_BIN=path/to/flinch-trace  uses a binary built elsewhere (for a GPU host without Rust);
#        FLINCH_REFERENCE=DIR             the folder holding analyze_trace.py to compare against
#        scripts/gpu/check.sh --dry-run      (no GPU: scripted source + CPU spin; checks the plumbing only)
set -euo pipefail
cd "$(dirname "$0")/../.."
DRY=0
if [ "${1:-}" = "--dry-run" ]; then DRY=1; shift; fi
OUT="${1:-gpu-check-out}"
TOL="${TOL:-0.10}"
GPU="${GPU:-0}"
mkdir -p "$OUT"
rm -f "$OUT/trace.csv" "$OUT/trace.csv.meta.json" "$OUT/telemetry.jsonl"
if [ -n "${FLINCH_BIN:-}" ]; then BIN="$FLINCH_BIN"; else
  cargo build --release -q -p flinch-trace
  BIN=target/release/flinch-trace
fi

if [ "$DRY" = 1 ]; then
  # A scripted GPU that knows nothing of the load (no marks of its own): the checks run, the verdicts
  # cannot be right.
  printf '250,90,40,1980,60,1000000,30000,0\n251,91,40,1980,60,1000003,30000,0\n' >"$OUT/dry.gpu-script"
  SRC=(--scripted-gpu "$OUT/dry.gpu-script")
  LOAD=(python3 scripts/gpu/load.py --dry-run)
else
  SRC=(--require-gpu --gpu "$GPU")
  LOAD=(python3 scripts/gpu/load.py)
fi
echo "== recording (${LOAD[*]})"
"$BIN" record "${SRC[@]}" --interval-ms 10 --out "$OUT/trace.csv" --host-jsonl "$OUT/telemetry.jsonl" -- "${LOAD[@]}"

for w in "compute_start compute_end" "pause_start pause_end" "compute2_start compute2_end" "cmd_start cmd_end"; do
  set -- $w
  "$BIN" analyze --csv "$OUT/trace.csv" --start "$1" --end "$2" --json >"$OUT/$1.json"
  "$BIN" analyze --csv "$OUT/trace.csv" --start "$1" --end "$2" >"$OUT/$1.txt"
done

source scripts/reference.sh
REF=$(reference_optional analyze_trace.py)

python3 - "$OUT" "$TOL" "$DRY" "$REF" <<'PY'
import json, subprocess, sys
out, tol, dry, ref = sys.argv[1], float(sys.argv[2]), sys.argv[3] == "1", sys.argv[4]
fails = []
meta = json.load(open(f"{out}/trace.csv.meta.json"))
print("gpus:", [(g.get("name"), g["gpu_power_w_source"]) for g in meta["gpus"]])
print("health:", json.dumps(meta["health"]))
want = {"compute_start": "compute", "pause_start": "waiting", "compute2_start": "compute", "cmd_start": None}
ends = {"compute_start": "compute_end", "pause_start": "pause_end", "compute2_start": "compute2_end", "cmd_start": "cmd_end"}
for start, verdict in want.items():
    w = json.load(open(f"{out}/{start}.json"))["window"]
    g = w["gpus"][0]
    edge, counter = g.get("energy_edge_j"), g.get("energy_counter_j")
    v = w["verdict"]["verdict"]
    rel = abs(edge - counter) / counter if edge and counter else None
    print(f"{start}..{ends[start]}: {w['duration_s']:.3f} s verdict={v} edge={edge} J counter={counter} J rel_diff={rel}")
    if verdict and v != verdict:
        fails.append(f"{start}: verdict {v}, expected {verdict}")
    if start != "pause_start" and (rel is None or rel > tol):
        fails.append(f"{start}: counter vs trapezoid differ by {rel} (tolerance {tol})")
    if ref:
        r = subprocess.run(["python3", ref, "--csv", f"{out}/trace.csv", "--start", start, "--end", ends[start]],
                           capture_output=True, text=True).stdout
        if r != open(f"{out}/{start}.txt").read():
            fails.append(f"{start}: flinch-trace analyze differs from the reference:\n{r}")
if dry:
    print(f"DRY RUN (scripted GPU, CPU spin): plumbing ran; {len(fails)} check(s) would fail on fake data:")
    for f in fails:
        print("  (dry)", f)
    sys.exit(0)
for f in fails:
    print("FAIL:", f)
print("gpu-check:", "FAILED" if fails else "passed")
sys.exit(1 if fails else 0)
PY
