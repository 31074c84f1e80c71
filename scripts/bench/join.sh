#!/usr/bin/env bash
# Join benchmark: `flinch-trace trace` on ~1 GB Kineto-like traces, plain and joined with a
# one-hour recording at 10 ms (360,000 rows), side by side, interleaved; wall, CPU and peak RSS,
# each as a ratio to plain `trace --json` on the same file in the same rounds.
# Prints a table; records nothing by itself (copy the figures into BENCHMARKS.md, "Trace join").
#
# Usage: scripts/bench/join.sh [MEGABYTES]   (default 1000)
# Env:   BENCH_RUNS=3   rounds (each round runs every command once, in turn)
#        BENCH_ONLY=RE  only the commands whose "FILE|ARGS" matches the extended regex RE (and
#                       only their data is generated), e.g. BENCH_ONLY='pauses/trace.json.gz'
# Data (native/examples/gen_trace.rs, deterministic; delete a folder to regenerate):
#   bench-data/kineto-<MB>mb         SHAPE plain: no GPU gap of 10 us or more (the shape of
#                                    scripts/bench/trace.sh)
#   bench-data/kineto-<MB>mb-pauses  SHAPE plain+pauses: 40 data-loading pauses of 100-800 ms
#   bench-data/stack-<MB>mb-pauses   SHAPE with_stack+pauses: the same on a with_stack trace
#   bench-data/join-360k.csv         the recording (written here)
set -euo pipefail
cd "$(dirname "$0")/../.."
MB=${1:-1000}
RUNS=${BENCH_RUNS:-3}
CSV=bench-data/join-360k.csv

cargo build --release -q -p flinch-trace --bin flinch-trace --example gen_trace
BIN=target/release/flinch-trace
ONLY=${BENCH_ONLY:-}
for spec in "kineto-${MB}mb plain" "kineto-${MB}mb-pauses plain+pauses" "stack-${MB}mb-pauses with_stack+pauses"; do
    read -r dir shape <<<"$spec"
    if [[ -n $ONLY ]] && ! grep -qE -- "$ONLY" <<<"bench-data/$dir/trace.json.gz|"; then
        continue
    fi
    if [[ ! -s bench-data/$dir/trace.json || ! -s bench-data/$dir/trace.json.gz ]]; then
        target/release/examples/gen_trace "bench-data/$dir" "$MB" "$shape"
    fi
done
if [[ ! -s $CSV ]]; then
    python3 scripts/bench/gen-recording.py "$CSV"
fi

# FILE|ARGS: the first command on each file is the baseline of that file's ratios.
P=bench-data/kineto-${MB}mb-pauses/trace.json
S=bench-data/stack-${MB}mb-pauses/trace.json
O=bench-data/kineto-${MB}mb/trace.json
CMDS=(
    "$P|--json" "$P|--pauses --json" "$P|--telemetry $CSV --json" "$P|--pauses --top-pauses 5 --json"
    "$S|--json" "$S|--pauses --json" "$S|--telemetry $CSV --json"
    "$O|--json" "$O|--pauses --json" "$O|--telemetry $CSV --json" "$O|--pauses --min-gap-ms 0.001 --json"
    "$P.gz|--json" "$P.gz|--pauses --json" "$P.gz|--telemetry $CSV --json"
)
if [[ -n $ONLY ]]; then
    kept=()
    for c in "${CMDS[@]}"; do
        if grep -qE -- "$ONLY" <<<"$c"; then kept+=("$c"); fi
    done
    CMDS=("${kept[@]}")
fi
echo "== load before: $(uptime)"
echo "== machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
for c in "${CMDS[@]}"; do echo "${c%%|*}"; done | sort -u | while read -r f; do
    echo "== $f: $(stat -c %s "$f") bytes"
    cat "$f" >/dev/null
done
echo "== $CSV: $(wc -l <"$CSV") lines"
RAW=$(mktemp)
trap 'rm -f "$RAW" /tmp/bench-join.time' EXIT
for round in $(seq "$RUNS"); do
    for c in "${CMDS[@]}"; do
        file=${c%%|*}
        args=${c#*|}
        # shellcheck disable=SC2086
        /usr/bin/time -f "%e %U %S %M" -o /tmp/bench-join.time "$BIN" trace "$file" $args >/dev/null
        read -r wall user sys rss </tmp/bench-join.time
        echo "$round|$file|$args|$wall|$user|$sys|$rss" >>"$RAW"
    done
done
echo "== load after: $(uptime)"
python3 - "$RAW" <<'PY'
import sys, statistics as st
rows = [l.rstrip("\n").split("|") for l in open(sys.argv[1])]
order, data = [], {}
for r, f, a, wall, user, sys_, rss in rows:
    k = (f, a)
    if k not in data:
        order.append(k)
        data[k] = []
    data[k].append((int(r), float(wall), float(user) + float(sys_), int(rss) / 1024))
base = {}
print(f"{'file':<44} {'args':<44} {'wall s (rounds)':<32} {'wall x':>6} {'cpu s med':>9} {'cpu x':>6} {'rss MiB':>11}")
for f, a in order:
    d = data[(f, a)]
    if f not in base:
        base[f] = d
    b = {r: (w, c) for r, w, c, _ in base[f]}
    wr = st.median(w / b[r][0] for r, w, c, _ in d)
    cr = st.median(c / b[r][1] for r, w, c, _ in d)
    walls = ", ".join(f"{w:.2f}" for _, w, _, _ in d)
    cpu = st.median(c for _, _, c, _ in d)
    rss = [x for *_, x in d]
    print(f"{f:<44} {a:<44} {walls:<32} {wr:>6.2f} {cpu:>9.2f} {cr:>6.2f} {min(rss):>5.1f}-{max(rss):<5.1f}")
print("(x: the median over rounds of each round's ratio to the file's first command in that round)")
PY
