#!/usr/bin/env bash
# Thread scaling of `flinch-trace trace`: plain JSON and `.json.gz` at N = 1, 2, 4, ... threads,
# beside `cat` and `rapidgzip -d -P N` on the same files, in one run. Each command runs
# BENCH_RUNS times in turn (all N of one round before the next round); the best wall time and the
# least CPU time (user + system) are kept. The JSON of every N is compared with N = 1
# (byte-identical, or the script fails). A `.gz` at N >= 3 takes the route of one inflater
# feeding N scan threads (docs/threads.md); N = 1 and 2 the one-scanner routes.
#
# Usage: scripts/bench/threads.sh [MEGABYTES] [THREADS...]
#        (default 1000 MB; threads 1 2 4 8 16, those above the CPUs this process may use dropped;
#        threads given are all run, e.g. 3 and 4 on two cores to see the route's cost there)
# Env:   BENCH_RUNS=3        rounds
#        BENCH_SHAPE=plain   or with_stack (native/examples/gen_trace.rs)
#        FLINCH_BIN=PATH     the binary (default: built here, target/release/flinch-trace); on a
#                            machine without a toolchain, carry a built binary and its generator
#        GEN_TRACE=PATH      the generator (default target/release/examples/gen_trace)
#        RAPIDGZIP=PATH      rapidgzip's command line tool (default: `rapidgzip` on PATH; without
#                            it that column says "not run")
#        BENCH_DATA=DIR      where the trace is generated (default bench-data)
# Output: a Markdown table of GB/s of decoded JSON per command and N, and each figure's ratio to
# `cat` (plain) or `rapidgzip -P N` (gz) of the same round.
set -euo pipefail
cd "$(dirname "$0")/../.."

MB=${1:-1000}
shift || true
RUNS=${BENCH_RUNS:-3}
SHAPE=${BENCH_SHAPE:-plain}
DATA_ROOT=${BENCH_DATA:-bench-data}
CPUS=$(nproc)
if (($# > 0)); then
    WANT=("$@")
else
    WANT=(1 2 4 8 16)
fi
THREADS=()
for n in "${WANT[@]}"; do
    if (($# > 0 || n <= CPUS)); then THREADS+=("$n"); fi
done
((${#THREADS[@]} > 0)) || THREADS=(1)

if [[ -n ${FLINCH_BIN:-} ]]; then
    BIN=$FLINCH_BIN
    GEN=${GEN_TRACE:-$(dirname "$BIN")/examples/gen_trace}
else
    cargo build --release -q -p flinch-trace --bin flinch-trace --example gen_trace
    BIN=target/release/flinch-trace
    GEN=${GEN_TRACE:-target/release/examples/gen_trace}
fi
RGZ=${RAPIDGZIP:-$(command -v rapidgzip || true)}

case $SHAPE in
    plain) DATA=$DATA_ROOT/kineto-${MB}mb ;;
    with_stack) DATA=$DATA_ROOT/stack-${MB}mb ;;
    *) echo "BENCH_SHAPE must be plain or with_stack" >&2; exit 2 ;;
esac
JSON=$DATA/trace.json
GZ=$DATA/trace.json.gz
if [[ ! -s $JSON || ! -s $GZ ]]; then
    echo "== generating $DATA ($MB MB, $SHAPE)" >&2
    "$GEN" "$DATA" "$MB" "$SHAPE" >&2
fi
BYTES=$(stat -c %s "$JSON")

OUT=$(mktemp -d)
trap 'rm -rf "$OUT"' EXIT
declare -A best cpu rss

# time_cmd KEY CMD...: the best wall time, least CPU time and largest peak RSS of KEY over the
# rounds; stdout to $OUT/KEY.out.
time_cmd() {
    local key=$1
    shift
    local s u y c m
    /usr/bin/time -f '%e %U %S %M' -o "$OUT/$key.time" "$@" >"$OUT/$key.out"
    read -r s u y m <"$OUT/$key.time"
    c=$(echo "$u + $y" | bc -l)
    if [[ -z ${best[$key]:-} ]] || (($(echo "$s < ${best[$key]}" | bc -l))); then best[$key]=$s; fi
    if [[ -z ${cpu[$key]:-} ]] || (($(echo "$c < ${cpu[$key]}" | bc -l))); then cpu[$key]=$c; fi
    if [[ -z ${rss[$key]:-} ]] || ((m > rss[$key])); then rss[$key]=$m; fi
}

cat "$JSON" "$GZ" >/dev/null # the page cache, warm for every command
for ((round = 0; round < RUNS; round++)); do
    time_cmd cat cat "$JSON"
    for n in "${THREADS[@]}"; do
        time_cmd "plain.$n" "$BIN" trace "$JSON" --json --threads "$n"
        time_cmd "gz.$n" "$BIN" trace "$GZ" --json --threads "$n"
        if [[ -n $RGZ ]]; then
            time_cmd "rgz.$n" "$RGZ" -d -c -P "$n" "$GZ"
            : >"$OUT/rgz.$n.out"
        fi
    done
    for n in "${THREADS[@]}"; do
        for kind in plain gz; do
            cmp -s "$OUT/plain.${THREADS[0]}.out" "$OUT/$kind.$n.out" || {
                # The source line names the file: compare the rest.
                diff <(grep -v '"source"' "$OUT/plain.${THREADS[0]}.out") \
                    <(grep -v '"source"' "$OUT/$kind.$n.out") >/dev/null || {
                    echo "OUTPUT DIFFERS: $kind at $n threads" >&2
                    exit 1
                }
            }
        done
    done
done

gbps() { printf '%.3f' "$(echo "$BYTES / $1 / 1000000000" | bc -l)"; }
ratio() { printf '%.3f' "$(echo "$1 / $2" | bc -l)"; }
echo "$(basename "$DATA"): $BYTES bytes of JSON, $(stat -c %s "$GZ") gzipped; $CPUS CPUs; best of $RUNS; GB/s of JSON"
echo "(load average before: $(cut -d' ' -f1-3 /proc/loadavg)); cat: $(gbps "${best[cat]}") GB/s"
echo
echo "| threads | trace plain GB/s | plain / cat | plain CPU-s | trace .gz GB/s | .gz CPU-s | .gz peak MiB | rapidgzip -d -P N GB/s | .gz / rapidgzip |"
echo "|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for n in "${THREADS[@]}"; do
    p=$(gbps "${best[plain.$n]}")
    g=$(gbps "${best[gz.$n]}")
    pc=$(ratio "${best[cat]}" "${best[plain.$n]}")
    if [[ -n ${best[rgz.$n]:-} ]]; then
        r=$(gbps "${best[rgz.$n]}")
        gr=$(ratio "${best[rgz.$n]}" "${best[gz.$n]}")
    else
        r="not run"
        gr="-"
    fi
    mib=$(((rss[gz.$n] + 512) / 1024))
    echo "| $n | $p | $pc | ${cpu[plain.$n]} | $g | ${cpu[gz.$n]} | $mib | $r | $gr |"
done
echo
echo "outputs: identical for every thread count (and for .gz and plain)"
