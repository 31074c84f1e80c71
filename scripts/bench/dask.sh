#!/usr/bin/env bash
# Many ranks on Dask: examples/dask_ranks.py over N rank traces of ~MB megabytes each on a
# LocalCluster of 2 worker processes, side by side with the reference trace_summary (Python) run
# over the same files one after another in one process, and with `flinch-trace trace --json
# --mergeable` run over them one after another. Prints a table; records nothing by itself (copy
# the figures into BENCHMARKS.md, "Many ranks on Dask").
#
# Usage: scripts/bench/dask.sh [RANKS] [MEGABYTES]      (default 64 ranks of 100 MB: ~6.4 GB of disk)
# Env:   FLINCH_REFERENCE=DIR      the folder holding summarize_host_telemetry.py (without it: skipped)
#        BENCH_SKIP_REFERENCE=1    skip the reference (~4 s per 100 MB file)
#        FLINCH_PY_ENV=DIR         the venv with dask and distributed (default target/py-env, from
#                                  scripts/setup.sh); the wheel is installed into it here
# Data:  bench-data/stack-<MB>mb/trace.json (scripts/bench/trace.sh's with_stack generator, deterministic),
#        copied to bench-data/ranks-<RANKS>x<MB>mb/rank-<k>.json (bench-data/ is git-ignored; delete to
#        regenerate). Every rank is the same trace: what differs between ranks does not change the cost.
set -euo pipefail
cd "$(dirname "$0")/../.."

RANKS=${1:-64}
MB=${2:-100}
PY_ENV=${FLINCH_PY_ENV:-target/py-env}
source scripts/reference.sh
REF_DIR=""
if [[ ${BENCH_SKIP_REFERENCE:-0} != 1 ]]; then
    REF=$(reference_optional summarize_host_telemetry.py)
    [[ -z $REF ]] || REF_DIR=$(dirname "$REF")
fi
ONE=bench-data/stack-${MB}mb
DATA=bench-data/ranks-${RANKS}x${MB}mb

need_kb=$(( (RANKS + 2) * MB * 1000 ))
free_kb=$(df -Pk . | awk 'NR==2{print $4}')
if [[ ! -d $DATA && $free_kb -lt $need_kb ]]; then
    echo "bench-dask: needs ~$((need_kb / 1000000)) GB free for $DATA, $((free_kb / 1000000)) GB free" >&2
    exit 1
fi

echo "== build (release): gen_trace, flinch-trace; the wheel into $PY_ENV"
cargo build --release -q -p flinch-trace --bin flinch-trace --example gen_trace
BIN=target/release/flinch-trace
"$PY_ENV/bin/pip" install -q --disable-pip-version-check --force-reinstall --no-deps ./python

if [[ ! -s $ONE/trace.json ]]; then
    echo "== generate $ONE (with_stack, deterministic)"
    target/release/examples/gen_trace "$ONE" "$MB" with_stack
fi
if [[ ! -s $DATA/rank-$((RANKS - 1)).json ]]; then
    echo "== copy to $DATA/rank-0..$((RANKS - 1)).json"
    mkdir -p "$DATA"
    for ((k = 0; k < RANKS; k++)); do cp "$ONE/trace.json" "$DATA/rank-$k.json"; done
fi
bytes=$(du -cb "$DATA"/rank-*.json | tail -1 | cut -f1)
echo "== files: $RANKS x $(stat -c %s "$ONE/trace.json") bytes = $bytes bytes in $DATA"
echo "== machine: $(nproc) cores, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -m); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
echo "== load before: $(uptime)"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
files=()
for ((k = 0; k < RANKS; k++)); do files+=("$DATA/rank-$k.json"); done

# wall seconds and peak RSS (MiB) of one command, by GNU time.
run() {
    local name=$1
    shift
    /usr/bin/time -f "%e %M" -o "$TMP/time" "$@" >"$TMP/out" 2>"$TMP/err" || {
        echo "$name failed:" >&2
        cat "$TMP/err" >&2
        exit 1
    }
    read -r secs kb <"$TMP/time"
    printf '%-58s %9.1f s  peak RSS %6.0f MiB\n' "$name" "$secs" "$((kb / 1024))"
    echo "$secs" >"$TMP/secs-$name"
}

# Every run reads the files from the page cache: warmed before each (5.9 GB for 64 x 100 MB).
warm() { cat "${files[@]}" >/dev/null; }

declare -A dask_s
for carry in dict text; do
    echo "== dask: examples/dask_ranks.py, LocalCluster of 2 worker processes x 1 thread, carrying $carry"
    warm
    /usr/bin/time -f "%e %M" -o "$TMP/time" "$PY_ENV/bin/python" examples/dask_ranks.py --workers 2 \
        --carry "$carry" --out "$TMP/merged-$carry.json" "${files[@]}" 2>"$TMP/err" || { cat "$TMP/err" >&2; exit 1; }
    read -r total _ <"$TMP/time"
    line=$(grep '^dask_ranks:' "$TMP/err")
    echo "$line"
    dask_s[$carry]=$(sed -E 's/.*: ([0-9.]+) s;.*/\1/' <<<"$line")
    echo "   (the process, cluster start and stop included: ${total} s)"
done
cmp -s "$TMP/merged-dict.json" "$TMP/merged-text.json" || python3 -c '
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
sys.exit(0 if a == b else "the two carries merged to different results")' "$TMP/merged-dict.json" "$TMP/merged-text.json"

echo "== flinch-trace trace --json --mergeable, one file after another (one process each)"
cli_loop() { for f in "$@"; do "$BIN" trace "$f" --json --mergeable >/dev/null; done; }
warm
start=$(date +%s.%N)
cli_loop "${files[@]}"
cli_s=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
echo "flinch-trace CLI, serial: $cli_s s"

ref_s="-"
if [[ -n $REF_DIR ]]; then
    echo "== reference trace_summary (Python), one file after another in one process"
    warm
    run "reference trace_summary (python), serial" python3 -c '
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from summarize_host_telemetry import trace_summary
for p in sys.argv[2:]:
    json.dumps(trace_summary(Path(p)))
' "$REF_DIR" "${files[@]}"
    ref_s=$(cat "$TMP/secs-reference trace_summary (python), serial")
else
    echo "reference trace_summary (skipped: BENCH_SKIP_REFERENCE=1 or FLINCH_REFERENCE unset)"
fi
echo "== load after: $(uptime)"
for carry in dict text; do
    awk -v name="$carry" -v d="${dask_s[$carry]}" -v c="$cli_s" -v r="$ref_s" -v b="$bytes" 'BEGIN{
        printf "dask, 2 workers, carrying %s: %.1f s (%.0f MB/s)", name, d, b/d/1e6;
        if (r != "-") printf "; %.1fx faster than the reference serially (%.1f s)", r/d, r;
        printf "; %.2fx the CLI serially (%.1f s)\n", c/d, c }'
done
