#!/usr/bin/env bash
# Two builds of flinch-trace side by side on the same inputs, interleaved in rounds: for each
# command, the best wall time, the CPU time and the peak RSS of each binary, the ratio NEW/OLD,
# and whether their stdout is byte-identical. For a refactor that must not change output or
# speed (docs: "What must not change").
#
# Usage: scripts/bench/old-vs-new.sh OLD_BIN NEW_BIN DATA_DIR
# Env:   BENCH_RUNS=3 rounds; BENCH_ONLY=RE only the commands whose NAME matches the regex RE;
#        BENCH_REPEAT=6 copies of the trace on each `trace` command line (so that a run lasts long
#        enough for /usr/bin/time's 10 ms resolution; the output is then an array of them).
# Data (DATA_DIR, generated when absent by the examples of NEW's tree, deterministic):
#   kineto-500mb-pauses/trace.json{,.gz}   gen_trace 500 plain+pauses
#   stack-500mb-pauses/trace.json          gen_trace 500 with_stack+pauses
#   rec-1h.csv                             a one-hour recording at 10 ms on the trace's clock
#   rows-5m.csv                            gen_csv 5000000 (analyze)
#   runs/                                  a runs folder holding the .gz trace and host telemetry
set -euo pipefail
OLD=$(realpath "$1")
NEW=$(realpath "$2")
DATA=$(realpath -m "$3")
RUNS=${BENCH_RUNS:-3}
ONLY=${BENCH_ONLY:-}
REPEAT=${BENCH_REPEAT:-6}
cd "$(dirname "$0")/../.."
mkdir -p "$DATA"
cargo build --release -q -p flinch-trace --example gen_trace --example gen_csv
P=$DATA/kineto-500mb-pauses/trace.json
S=$DATA/stack-500mb-pauses/trace.json
[[ -s $P && -s $P.gz ]] || target/release/examples/gen_trace "$DATA/kineto-500mb-pauses" 500 plain+pauses
[[ -s $S ]] || target/release/examples/gen_trace "$DATA/stack-500mb-pauses" 500 with_stack+pauses
REC=$DATA/rec-1h.csv
if [[ ! -s $REC ]]; then
    python3 scripts/bench/gen-recording.py "$REC"
fi
ROWS=$DATA/rows-5m.csv
[[ -s $ROWS ]] || target/release/examples/gen_csv 5000000 "$ROWS"
R=$DATA/runs
if [[ ! -d $R ]]; then
    mkdir -p "$R/bench-trace/traces" "$R/prof-host"
    ln "$P.gz" "$R/bench-trace/traces/rank0.pt.trace.json.gz" 2>/dev/null || cp "$P.gz" "$R/bench-trace/traces/rank0.pt.trace.json.gz"
    echo '{"status": "completed"}' >"$R/bench-trace/report.json"
    python3 - "$R" <<'PY'
import json, random, sys
from pathlib import Path
root, rng, t = Path(sys.argv[1]), random.Random(9), 1712000000.0
with open(root / "prof-host" / "telemetry.jsonl", "w") as f:
    for i in range(7200):
        t += 1 + rng.uniform(-0.05, 0.05)
        f.write(json.dumps({"unix": t, "host_memory": {"available": rng.randint(1, 9) * 10**10, "used": 5 * 10**10},
            "host_cpu_percent": rng.uniform(0, 100),
            "gpu_csv": f"0, NVIDIA H100, {rng.randint(1000, 80000)}, 81559, 50, {rng.uniform(60, 700):.2f}, 1980, 2619, {rng.randint(0, 100)}, P0"}) + "\n")
PY
fi

# FILE repeated REPEAT times.
rep() {
    local out="" k
    for ((k = 0; k < REPEAT; k++)); do out+="$1 "; done
    echo "$out"
}
# NAME|ARGS
CMDS=(
    "trace plain|trace $(rep "$P") --json"
    "trace with_stack|trace $(rep "$S") --json"
    "trace .gz|trace $(rep "$P.gz") --json"
    "trace mergeable|trace $(rep "$S") --json --mergeable"
    "join pauses|trace $(rep "$P") --pauses --json"
    "join pauses with_stack|trace $(rep "$S") --pauses --json"
    "join telemetry|trace $(rep "$P") --telemetry $REC --json"
    "join .gz pauses|trace $(rep "$P.gz") --pauses --json"
    "analyze|analyze --csv $ROWS --json"
    "summarize|summarize --runs $R --out @OUT@"
)
OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
declare -A best cpu rss
for ((round = 0; round < RUNS; round++)); do
    for spec in "${CMDS[@]}"; do
        name=${spec%%|*}
        args=${spec#*|}
        [[ -z $ONLY || $name =~ $ONLY ]] || continue
        for which in old new; do
            bin=$OLD
            [[ $which == new ]] && bin=$NEW
            a=${args//@OUT@/$OUT/$which.file}
            rm -f "$OUT/$which.file"
            # shellcheck disable=SC2086
            /usr/bin/time -f '%e %U %S %M' -o "$OUT/time" "$bin" $a >"$OUT/$which.out" 2>"$OUT/$which.err" || {
                echo "$which failed: $name" >&2
                cat "$OUT/$which.err" >&2
                exit 1
            }
            [[ ! -e $OUT/$which.file ]] || cat "$OUT/$which.file" >>"$OUT/$which.out"
            read -r wall user sys kib <"$OUT/time"
            key="$name|$which"
            c=$(echo "$user + $sys" | bc)
            if [[ -z ${best[$key]:-} ]] || (($(echo "$wall < ${best[$key]}" | bc))); then best[$key]=$wall; fi
            if [[ -z ${cpu[$key]:-} ]] || (($(echo "$c < ${cpu[$key]}" | bc))); then cpu[$key]=$c; fi
            if [[ -z ${rss[$key]:-} ]] || ((kib > ${rss[$key]})); then rss[$key]=$kib; fi
        done
        if ! cmp -s "$OUT/old.out" "$OUT/new.out"; then
            echo "OUTPUT DIFFERS: $name" >&2
            diff <(head -c 2000 "$OUT/old.out") <(head -c 2000 "$OUT/new.out") >&2 || true
            exit 1
        fi
    done
done
printf '| command | old wall s | new wall s | wall new/old | CPU new/old | old RSS MiB | new RSS MiB | stdout |\n'
printf '|---|---:|---:|---:|---:|---:|---:|---|\n'
for spec in "${CMDS[@]}"; do
    name=${spec%%|*}
    [[ -z $ONLY || $name =~ $ONLY ]] || continue
    o=$name\|old
    n=$name\|new
    printf '| %s | %s | %s | %.3f | %.3f | %.1f | %.1f | identical |\n' "$name" "${best[$o]}" "${best[$n]}" \
        "$(echo "${best[$n]} / ${best[$o]}" | bc -l)" "$(echo "${cpu[$n]} / ${cpu[$o]}" | bc -l)" \
        "$(echo "${rss[$o]} / 1024" | bc -l)" "$(echo "${rss[$n]} / 1024" | bc -l)"
done
