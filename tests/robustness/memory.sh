#!/usr/bin/env bash
# Memory that must not grow with the input (issue 21, items 15-17): `summarize` over many request
# and telemetry rows, `merge` of many ranks (an array file, and many files), and the histograms
# of `trace --mergeable` over many wide-ranging durations, each under a
# peak-RSS ceiling read by /usr/bin/time (or /proc when it is missing), with the output
# checked against a small exact run where one is at hand. Takes the binary from FLINCH_BIN.
set -euo pipefail

BIN=${FLINCH_BIN:-target/debug/flinch-trace}
BIN=$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")
HERE=$(cd "$(dirname "$0")" && pwd)
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
passed=0
failed=0

ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "FAIL: $*" >&2; }

# peak_kb CMD... : runs CMD (stdout to $TMP/out), prints its peak RSS in KiB.
peak_kb() {
    if [ -x /usr/bin/time ]; then
        timeout 120 /usr/bin/time -f "%M" -o "$TMP/rss" "$@" >"$TMP/out" 2>"$TMP/err" || return 1
        tail -1 "$TMP/rss"
    else
        timeout 120 "$@" >"$TMP/out" 2>"$TMP/err" &
        local pid=$! max=0 kb
        while kill -0 "$pid" 2>/dev/null; do
            kb=$(awk '/VmHWM/ {print $2}' "/proc/$pid/status" 2>/dev/null || echo 0)
            [ "${kb:-0}" -gt "$max" ] && max=$kb
            sleep 0.05
        done
        wait "$pid" || return 1
        echo "$max"
    fi
}

# 1. summarize: 100,000 request rows and telemetry rows (~45 MB), under 64 MiB; the output is the
# same with a budget small enough that every series spills (exactness past the budget).
python3 "$HERE/gen_runs.py" "$TMP/runs" 100000 100000
if kb=$(peak_kb "$BIN" summarize --runs "$TMP/runs" --out "$TMP/s.json" --skip-traces); then
    if [ "$kb" -lt 65536 ]; then ok; else bad "summarize of 100,000 request rows: peak RSS ${kb} KiB >= 64 MiB"; fi
else
    bad "summarize failed: $(cat "$TMP/err")"
fi
if timeout 120 "$BIN" summarize --runs "$TMP/runs" --out "$TMP/s2.json" --skip-traces --max-values 5000 >/dev/null 2>&1 \
    && cmp -s "$TMP/s.json" "$TMP/s2.json"; then ok; else bad "summarize with a small value budget differs"; fi
if grep -q '"sustained_last_60s"' "$TMP/s.json" && ! grep -q 'quantile sketch' "$TMP/s.json"; then ok; else bad "summarize output incomplete or approximate"; fi
rm -rf "$TMP/runs"

# 2. merge: an array of 30,000 tiny rank summaries (~110 MB) under 64 MiB (the output lists every
# rank: ~10 MB), and the same as the merge of a few of them merged again with the rest.
python3 "$HERE/../ranks/gen_ranks.py" "$TMP/r" 1 >/dev/null
"$BIN" trace "$TMP/r/rank-0.json" --json --mergeable >"$TMP/one.json"
python3 - "$TMP/one.json" 30000 "$TMP/arr.json" "$TMP/head.json" "$TMP/tail.json" <<'PY'
import json, sys
t = open(sys.argv[1]).read().strip()
n = int(sys.argv[2])
src = json.dumps(json.loads(t)["source"])
assert t.count('"source": ' + src) == 1 and t.count('"source":' + src) == 1
def one(i):
    name = '"rank-%07d.json"' % i
    return t.replace('"source": ' + src, '"source": ' + name).replace('"source":' + src, '"source":' + name)
with open(sys.argv[3], "w") as f, open(sys.argv[4], "w") as h, open(sys.argv[5], "w") as g:
    f.write("["); h.write("["); g.write("[")
    for i in range(n):
        s = one(i)
        f.write(("," if i else "") + s)
        if i < 10: h.write(("," if i else "") + s)
        else: g.write(("," if i > 10 else "") + s)
    f.write("]"); h.write("]"); g.write("]")
PY
if kb=$(peak_kb "$BIN" merge "$TMP/arr.json" --json); then
    if [ "$kb" -lt 65536 ]; then ok; else bad "merge of 30,000 ranks: peak RSS ${kb} KiB >= 64 MiB"; fi
    mv "$TMP/out" "$TMP/m.json"
    n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ranks"]["n"])' "$TMP/m.json")
    if [ "$n" = 30000 ]; then ok; else bad "merge of 30,000 ranks lists $n"; fi
else
    bad "merge failed: $(cat "$TMP/err")"
fi
if timeout 60 "$BIN" merge "$TMP/head.json" --json >"$TMP/h.json" \
    && timeout 120 "$BIN" merge "$TMP/h.json" "$TMP/tail.json" --json >"$TMP/m2.json" \
    && cmp -s "$TMP/m.json" "$TMP/m2.json"; then ok; else bad "merge in two steps differs"; fi
# The same file twice: a warning on stderr, and one in the output.
if timeout 30 "$BIN" merge "$TMP/one.json" "$TMP/one.json" --json >"$TMP/d.json" 2>"$TMP/d.err" \
    && grep -q "is the same file as" "$TMP/d.err" && grep -q "merged 2 times" "$TMP/d.json"; then ok; else bad "a file given twice is not warned about"; fi

# 3. trace --mergeable: 1,000,000 durations over 2,000 ops, log-uniform over 1 us .. 1 s, so that
# nearly every duration is a histogram bucket of its own (~100 MB). The section's histograms
# take less than 4 MiB beyond what plain `--json` peaks at (16-byte buckets: ~7 MB more), at
# scale 8, with every op's histogram, and the file merges.
python3 - "$TMP/wide.json" <<'PY'
import random, sys
rng = random.Random(2117)
with open(sys.argv[1], "w") as f:
    f.write('{"traceEvents": [\n')
    for k in range(1_000_000):
        dur_ns = int(1000 * 2 ** (rng.random() * 20))
        f.write('%s{"ph": "X", "cat": "c", "name": "op%d", "ts": %d, "dur": %d.%03d}' % (
            ",\n" if k else "", rng.randrange(2000), k, dur_ns // 1000, dur_ns % 1000))
    f.write("\n]}\n")
PY
if plain=$(peak_kb "$BIN" trace "$TMP/wide.json" --json) && kb=$(peak_kb "$BIN" trace "$TMP/wide.json" --json --mergeable); then
    if [ "$kb" -lt $((plain + 4096)) ]; then ok; else bad "trace --mergeable of 1,000,000 wide durations: peak RSS ${kb} KiB, plain --json ${plain} KiB"; fi
    mv "$TMP/out" "$TMP/wide-m.json"
    if python3 - "$TMP/wide-m.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
m = d["mergeable"]
assert m["scale"] == 8 and len(m["ops"]) == 2000, (m["scale"], len(m["ops"]))
assert all(o["histogram"] for o in m["ops"])
assert sum(len(o["histogram"]["buckets"]) for o in m["ops"]) > 900_000
assert not d["warnings"], d["warnings"]
PY
    then ok; else bad "trace --mergeable of wide durations: section not exact at scale 8"; fi
    if timeout 60 "$BIN" merge "$TMP/wide-m.json" "$TMP/wide-m.json" --json >"$TMP/wide-2.json" 2>/dev/null \
        && grep -q '"n": 2' "$TMP/wide-2.json"; then ok; else bad "merge of the wide section failed"; fi
else
    bad "trace --mergeable of wide durations failed: $(cat "$TMP/err")"
fi
rm -f "$TMP/wide.json"

echo "robustness memory: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
