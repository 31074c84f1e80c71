#!/usr/bin/env bash
# Peak RSS of `summarize` (many request and telemetry rows), `merge` (many tiny ranks in one array
# file) and `trace --json --mergeable` (a 1 GB with_stack trace, then the merge of its section
# with itself), for an old and a new binary side by side in one run (BENCHMARKS.md, "summarize
# and merge memory").
#
# Usage: scripts/bench/memory.sh OLD_BIN NEW_BIN [ROWS] [RANKS] [TRACE_MB...]
#   (defaults 1000000 rows, 200000 ranks, 1000 MB; several TRACE_MB: one trace each; data under a
#   mktemp -d in /tmp, removed after). PARTS="mergeable" (any of summarize, merge, mergeable)
#   runs only those parts.
set -euo pipefail
OLD=$1
NEW=$2
ROWS=${3:-1000000}
RANKS=${4:-200000}
shift $(($# < 4 ? $# : 4))
SIZES=${*:-1000}
PARTS=${PARTS:-summarize merge mergeable}
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
TMP=$(mktemp -d /tmp/flinch-bench-memory.XXXXXX)
trap 'rm -rf "$TMP"' EXIT

measure() { # label cmd...: prints "label: peak KiB, wall s", output to $TMP/<label>.out
    local label=$1
    shift
    /usr/bin/time -f "%M %e" -o "$TMP/t" "$@" >"$TMP/$label.out" 2>/dev/null
    read -r kb s <"$TMP/t"
    printf '%-28s %10s KiB %8s s\n' "$label" "$kb" "$s"
}

if [[ " $PARTS " == *" summarize "* ]]; then
python3 "$ROOT/tests/robustness/gen_runs.py" "$TMP/runs" "$ROWS" "$ROWS"
echo "summarize: $ROWS request rows + $ROWS telemetry rows ($(du -sh "$TMP/runs" | cut -f1))"
measure summarize-old "$OLD" summarize --runs "$TMP/runs" --out "$TMP/s-old.json" --skip-traces
measure summarize-new "$NEW" summarize --runs "$TMP/runs" --out "$TMP/s-new.json" --skip-traces
cmp "$TMP/s-old.json" "$TMP/s-new.json" && echo "  outputs identical"
rm -rf "$TMP/runs"
fi

if [[ " $PARTS " == *" merge "* ]]; then
python3 "$ROOT/tests/ranks/gen_ranks.py" "$TMP/r" 1 >/dev/null
"$NEW" trace "$TMP/r/rank-0.json" --json --mergeable >"$TMP/one.json"
python3 - "$TMP/one.json" "$RANKS" "$TMP/arr.json" <<'PY'
import json, sys
t = open(sys.argv[1]).read().strip()
src = json.dumps(json.loads(t)["source"])
with open(sys.argv[3], "w") as f:
    f.write("[")
    for i in range(int(sys.argv[2])):
        name = '"rank-%07d.json"' % i
        f.write(("," if i else "") + t.replace('"source": ' + src, '"source": ' + name).replace('"source":' + src, '"source":' + name))
    f.write("]")
PY
echo "merge: $RANKS tiny ranks in one array file ($(du -sh "$TMP/arr.json" | cut -f1))"
measure merge-old "$OLD" merge "$TMP/arr.json" --json
measure merge-new "$NEW" merge "$TMP/arr.json" --json
cmp "$TMP/merge-old.out" "$TMP/merge-new.out" && echo "  outputs identical"
rm -f "$TMP/arr.json" "$TMP"/merge-*.out
fi

if [[ " $PARTS " == *" mergeable "* ]]; then
for MB in $SIZES; do
"$ROOT/target/release/examples/gen_trace" "$TMP/trace" "$MB" with_stack >/dev/null
echo "trace --json --mergeable: $(du -sh "$TMP/trace/trace.json" | cut -f1) with_stack trace"
for f in trace.json trace.json.gz; do
    measure "mergeable-old $f" "$OLD" trace "$TMP/trace/$f" --json --mergeable
    measure "mergeable-new $f" "$NEW" trace "$TMP/trace/$f" --json --mergeable
    cmp "$TMP/mergeable-old $f.out" "$TMP/mergeable-new $f.out" && echo "  outputs identical"
    measure "json-new $f" "$NEW" trace "$TMP/trace/$f" --json
done
echo "merge of the section with itself ($(du -h "$TMP/mergeable-new trace.json.out" | cut -f1) each)"
measure "merge-sections-old" "$OLD" merge "$TMP/mergeable-new trace.json.out" "$TMP/mergeable-new trace.json.out" --json
measure "merge-sections-new" "$NEW" merge "$TMP/mergeable-new trace.json.out" "$TMP/mergeable-new trace.json.out" --json
cmp "$TMP/merge-sections-old.out" "$TMP/merge-sections-new.out" && echo "  outputs identical"
rm -rf "$TMP/trace" "$TMP"/*.out
done
fi
