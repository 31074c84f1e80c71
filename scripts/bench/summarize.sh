#!/usr/bin/env bash
# summarize benchmark: wall time and peak RSS of `flinch-trace summarize` on a runs folder that
# holds a ~1 GB Kineto-like trace as .json.gz (plus one telemetry run of 2 h at 1 Hz), side by
# side with the Python reference summarize_host_telemetry.py on the same folder, and a parity
# check of the two outputs. Prints a table; copy the figures into BENCHMARKS.md ("summarize").
#
# Usage: scripts/bench/summarize.sh [MEGABYTES]   (default 1000: the trace is ~1 GB of JSON)
# Env:   BENCH_SKIP_REFERENCE=1   skip the Python reference
#        FLINCH_REFERENCE=DIR     the folder holding summarize_host_telemetry.py (without it: skipped)
# Data:  bench-data/kineto-<MB>mb/trace.json.gz from native/examples/gen_trace.rs (shared with
#        scripts/bench/trace.sh) and bench-data/summarize-<MB>mb/ (the runs folder, hard links).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
MB=${1:-1000}
source scripts/reference.sh
REF_DIR=""
if [[ ${BENCH_SKIP_REFERENCE:-0} != 1 ]]; then
    REF=$(reference_optional summarize_host_telemetry.py)
    [[ -z $REF ]] || REF_DIR=$(dirname "$REF")
fi
DATA=bench-data/kineto-${MB}mb
RUNS=bench-data/summarize-${MB}mb

echo "== build (release)"
cargo build --release -q -p flinch-trace --bin flinch-trace --example gen_trace
BIN=$ROOT/target/release/flinch-trace
if [[ ! -s $DATA/trace.json.gz ]]; then
    echo "== generate $DATA (deterministic)"
    target/release/examples/gen_trace "$DATA" "$MB"
fi
if [[ ! -d $RUNS ]]; then
    echo "== build runs folder $RUNS"
    mkdir -p "$RUNS/bench-trace/traces" "$RUNS/prof-host" "$RUNS/prof"
    ln "$DATA/trace.json.gz" "$RUNS/bench-trace/traces/rank0.pt.trace.json.gz" 2>/dev/null ||
        cp "$DATA/trace.json.gz" "$RUNS/bench-trace/traces/rank0.pt.trace.json.gz"
    echo '{"status": "completed"}' >"$RUNS/bench-trace/report.json"
    python3 - "$RUNS" <<'PY'
import json, random, sys
from pathlib import Path
root, rng, t = Path(sys.argv[1]), random.Random(9), 1712000000.0
with open(root / "prof-host" / "telemetry.jsonl", "w") as f:
    for i in range(7200):
        t += 1 + rng.uniform(-0.05, 0.05)
        p = rng.uniform(60, 700)
        f.write(json.dumps({"unix": t, "host_memory": {"available": rng.randint(1, 9) * 10**10, "used": 5 * 10**10},
            "host_cpu_percent": rng.uniform(0, 100), "power": {"ACLineStatus": 1},
            "gpu_csv": f"0, NVIDIA H100, {rng.randint(1000, 80000)}, 81559, 50, {p:.2f}, 1980, 2619, {rng.randint(0, 100)}, P0"}) + "\n")
(root / "prof" / "report.json").write_text(json.dumps({"status": "completed", "start_unix": 1712000010.0,
    "sustained_start_unix": 1712000600.0, "sustained_wall_s": 5400, "startup_s": 50.0}))
(root / "prof-host" / "status.json").write_text(json.dumps({"start_unix": 1712000000.0}))
with open(root / "prof" / "requests.jsonl", "w") as f:
    for i in range(5000):
        f.write(json.dumps({"phase": "warmup" if i < 3 else "sustained", "submitted_unix": 1712000590.0 + i * 1.08,
            "wall_s": rng.uniform(1, 9), "ttft_s": rng.uniform(0.1, 1), "rtf_total": rng.uniform(0.3, 1.5),
            "stall_at_ttfa_ms": rng.choice([0, 0, 30])}) + "\n")
PY
fi
gz_bytes=$(stat -L -c %s "$RUNS/bench-trace/traces/rank0.pt.trace.json.gz")
json_bytes=$(stat -c %s "$DATA/trace.json" 2>/dev/null || echo 0)
echo "== trace: $gz_bytes bytes gzip ($json_bytes bytes of JSON)"
echo "== machine: $(nproc) cores, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -m); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
cat "$RUNS/bench-trace/traces/rank0.pt.trace.json.gz" >/dev/null

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
measure() { # LABEL OUT CMD...: wall seconds and peak RSS of one run
    local label=$1 out=$2
    shift 2
    if ! /usr/bin/time -f '%e %M' -o "$TMP/time" "$@" >"$TMP/stdout" 2>"$TMP/err"; then
        printf '%-36s FAILED: %s\n' "$label" "$(tail -n1 "$TMP/err" | cut -c1-100)"
        return 1
    fi
    read -r secs rss_kb <"$TMP/time"
    printf '%-36s %8.2f s %8.1f MiB   %s\n' "$label" "$secs" "$(awk -v r="$rss_kb" 'BEGIN{print r/1024}')" "$(cat "$TMP/stdout")"
    echo "$secs" >"$TMP/$out.secs"
}
printf '\n%-36s %10s %12s   %s\n' "command" "wall" "peak RSS" "printed"
measure "flinch-trace summarize" ours "$BIN" summarize --runs "$RUNS" --out "$TMP/ours.json"
measure "flinch-trace summarize --skip-traces" ours_skip "$BIN" summarize --runs "$RUNS" --out "$TMP/ours_skip.json" --skip-traces
if [[ ${BENCH_SKIP_REFERENCE:-0} != 1 && -n $REF_DIR ]]; then
    measure "reference --skip-traces (python)" ref_skip python3 "$REF_DIR/summarize_host_telemetry.py" --runs "$RUNS" --out "$TMP/ref_skip.json" --skip-traces
    measure "reference (python)" ref python3 "$REF_DIR/summarize_host_telemetry.py" --runs "$RUNS" --out "$TMP/ref.json"
    awk -v a="$(cat "$TMP/ref_skip.secs")" -v b="$(cat "$TMP/ours_skip.secs")" 'BEGIN{if (b < 0.01) b = 0.01; printf "\ntelemetry only (--skip-traces) vs reference: %.1fx\n", a/b}'
    awk -v a="$(cat "$TMP/ref.secs")" -v b="$(cat "$TMP/ours.secs")" 'BEGIN{printf "\nspeed-up vs reference: %.1fx (target >= 10x)\n", a/b}'
    echo "== parity (floats within 1e-9 relative; trace duration_sum_us/busy_union_us are exact in ours and drift in the reference)"
    python3 - "$TMP/ref.json" "$TMP/ours.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
diffs = []
def cmp(x, y, path):
    if isinstance(x, dict) and isinstance(y, dict):
        if list(x) != [k for k in y if k != "warnings"]:
            only_ref = [k for k in x if k not in y]
            only_ours = [k for k in y if k not in x and k != "warnings"]
            diffs.append(f"{path}: keys differ (only in ref {only_ref}, only in ours {only_ours})")
        for k in x:
            cmp(x[k], y.get(k), f"{path}.{k}")
    elif isinstance(x, list) and isinstance(y, list):
        if len(x) != len(y):
            diffs.append(f"{path}: {len(x)} items in ref, {len(y)} in ours")
        for i, (u, v) in enumerate(zip(x, y)):
            cmp(u, v, f"{path}[{i}]")
    elif isinstance(x, float) and isinstance(y, float):
        if x != y and abs(x - y) > 1e-9 * max(abs(x), abs(y)):
            diffs.append(f"{path}: ref {x!r} ours {y!r} (rel {abs(x - y) / max(abs(x), abs(y)):.1e})")
    elif x != y or type(x) is not type(y):
        diffs.append(f"{path}: ref {x!r} ours {y!r}")
cmp(a, b, "$")
exact = [d for d in diffs if "duration_sum_us" in d.split(":")[0] or "busy_union_us" in d.split(":")[0]]
other = [d for d in diffs if d not in exact]
print(f"differences: {len(other)} (plus {len(exact)} category sums where the reference's float sums drift)")
for d in (other + exact)[:16]:
    print("  " + (d if len(d) < 200 else d[:197] + "..."))
PY
fi
