#!/usr/bin/env bash
# Trace engine benchmark: throughput and peak RSS of `flinch-trace trace` on a ~1 GB Kineto-like
# trace (.json and .json.gz), side by side with cat, gzip -dc, pigz -dc and the Python reference
# trace_summary on the same files. Prints a table; records nothing by itself (copy the figures
# into BENCHMARKS.md, "Trace engine").
#
# Usage: scripts/bench/trace.sh [MEGABYTES]     (default 1000: a ~1 GB trace)
# Env:   BENCH_SHAPE=plain        or with_stack: python_function frames, thousands of distinct ops
#                                 (see native/examples/gen_trace.rs)
#        BENCH_RUNS=3             runs per fast command; the best time and the largest RSS are kept
#        BENCH_SKIP_REFERENCE=1   skip the Python reference (~40 s per GB, ~500 MB RSS)
#        FLINCH_REFERENCE=DIR     the folder holding summarize_host_telemetry.py (without it: skipped)
# Data:  bench-data/kineto-<MEGABYTES>mb/trace.json{,.gz} (with_stack: bench-data/stack-<MEGABYTES>mb), generated once by
#        native/examples/gen_trace.rs (deterministic; delete the folder to regenerate).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROOT=$(pwd)

MB=${1:-1000}
RUNS=${BENCH_RUNS:-3}
SHAPE=${BENCH_SHAPE:-plain}
source scripts/reference.sh
REF_DIR=""
if [[ ${BENCH_SKIP_REFERENCE:-0} != 1 ]]; then
    REF=$(reference_optional summarize_host_telemetry.py)
    [[ -z $REF ]] || REF_DIR=$(dirname "$REF")
fi
case $SHAPE in
    plain) DATA=bench-data/kineto-${MB}mb ;;
    with_stack) DATA=bench-data/stack-${MB}mb ;;
    *) echo "BENCH_SHAPE must be plain or with_stack" >&2; exit 2 ;;
esac
JSON=$DATA/trace.json
GZ=$DATA/trace.json.gz

echo "== build (release)"
cargo build --release -q -p flinch-trace --bin flinch-trace --example gen_trace
BIN=target/release/flinch-trace

if [[ ! -s $GZ || ! -s $JSON ]]; then
    echo "== generate $DATA (deterministic)"
    target/release/examples/gen_trace "$DATA" "$MB" "$SHAPE"
fi

if ! command -v pigz >/dev/null; then
    echo "== install pigz"
    if command -v apt-get >/dev/null; then
        (apt-get install -y -qq pigz >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq pigz; }) >/dev/null 2>&1 || true
    fi
fi

json_bytes=$(stat -c %s "$JSON")
gz_bytes=$(stat -c %s "$GZ")
echo "== files: $JSON $json_bytes bytes; $GZ $gz_bytes bytes (ratio $(awk -v a="$json_bytes" -v b="$gz_bytes" 'BEGIN{printf "%.1f", a/b}'))"
echo "== load: $(uptime)"
echo "== machine: $(nproc) cores, $(awk '/MemTotal/{printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -m); $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //')"
# Warm the page cache so every row reads from memory.
cat "$JSON" "$GZ" >/dev/null

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

# measure LABEL FILE RUNS CMD...: best wall time, its CPU time (user+sys, all threads) and the
# peak RSS over RUNS runs; stdout discarded. On a shared machine wall time includes waiting for
# a core; CPU time does not, so both are printed.
results=()
measure() {
    local label=$1 file=$2 runs=$3
    shift 3
    local best="" best_cpu="" rss_max=0 status=ok
    for ((i = 0; i < runs; i++)); do
        if ! /usr/bin/time -f '%e %M %U %S' -o "$TMP/time" "$@" >/dev/null 2>"$TMP/err"; then
            status="FAILED: $(tail -n1 "$TMP/err" | cut -c1-80)"
            break
        fi
        read -r secs rss_kb user sys <"$TMP/time"
        if [[ -z $best ]] || awk -v a="$secs" -v b="$best" 'BEGIN{exit !(a<b)}'; then
            best=$secs
            best_cpu=$(awk -v u="$user" -v s="$sys" 'BEGIN{printf "%.2f", u+s}')
        fi
        ((rss_kb > rss_max)) && rss_max=$rss_kb
    done
    if [[ $status != ok ]]; then
        printf '%-34s %-14s %s\n' "$label" "$(basename "$file")" "$status"
        results+=("$label|$file|-|-|-")
        return
    fi
    local in_bytes
    in_bytes=$(stat -c %s "$file")
    awk -v l="$label" -v f="$(basename "$file")" -v s="$best" -v c="$best_cpu" -v ib="$in_bytes" -v jb="$json_bytes" -v r="$rss_max" \
        'BEGIN{ if (s < 0.01) s = 0.01; if (c < 0.01) c = 0.01;
                printf "%-34s %-14s %8.2f %8.2f %10.0f %10.0f %10.0f %8.1f\n", l, f, s, c, ib/s/1e6, jb/s/1e6, jb/c/1e6, r/1024 }'
    results+=("$label|$file|$best|$rss_max|$best_cpu")
}

printf '\n%-34s %-14s %8s %8s %10s %10s %10s %8s\n' "command" "file" "wall s" "cpu s" "MB/s file" "MB/s json" "json/cpu-s" "RSS MiB"
measure "cat" "$JSON" "$RUNS" cat "$JSON"
measure "gzip -dc" "$GZ" "$RUNS" gzip -dc "$GZ"
if command -v pigz >/dev/null; then
    measure "pigz -dc" "$GZ" "$RUNS" pigz -dc "$GZ"
else
    echo "pigz -dc                           (pigz not installed and apt-get unavailable)"
fi
measure "flinch-trace trace" "$JSON" "$RUNS" "$BIN" trace "$JSON"
measure "flinch-trace trace" "$GZ" "$RUNS" "$BIN" trace "$GZ"
measure "flinch-trace trace --json" "$GZ" 1 "$BIN" trace --json "$GZ"
measure "flinch-trace trace --exact" "$JSON" 1 "$BIN" trace --exact "$JSON"
# The default is exact: its JSON equals --exact's (memory alone, no limits).
"$BIN" trace --json "$GZ" >"$TMP/default.json"
"$BIN" trace --json --exact "$GZ" >"$TMP/exact.json"
if cmp -s "$TMP/default.json" "$TMP/exact.json"; then
    echo "default output equals --exact: yes"
else
    echo "default output equals --exact: NO"
fi
grep -q '"approximations"' "$TMP/default.json" && echo "default output states approximations" || true
if [[ -n $REF_DIR ]]; then
    ref=(python3 -c 'import json, sys; from pathlib import Path; sys.path.insert(0, sys.argv[1]); from summarize_host_telemetry import trace_summary; json.dump(trace_summary(Path(sys.argv[2])), sys.stdout)')
    measure "reference trace_summary (python)" "$JSON" 1 "${ref[@]}" "$REF_DIR" "$JSON"
    measure "reference trace_summary (python)" "$GZ" 1 "${ref[@]}" "$REF_DIR" "$GZ"
else
    echo "reference trace_summary            (skipped: BENCH_SKIP_REFERENCE=1 or FLINCH_REFERENCE unset)"
fi

# Ratios against the targets of the issue.
secs_of() { for r in "${results[@]}"; do IFS='|' read -r l f s _ <<<"$r"; [[ $l == "$1" && $f == "$2" ]] && echo "$s" && return; done; echo -; }
cpu_of() { for r in "${results[@]}"; do IFS='|' read -r l f _ _ c <<<"$r"; [[ $l == "$1" && $f == "$2" ]] && echo "$c" && return; done; echo -; }
echo
pigz_s=$(secs_of "pigz -dc" "$GZ")
ft_gz=$(secs_of "flinch-trace trace" "$GZ")
ft_json=$(secs_of "flinch-trace trace" "$JSON")
ref_json=$(secs_of "reference trace_summary (python)" "$JSON")
ft_json_cpu=$(cpu_of "flinch-trace trace" "$JSON")
awk -v p="$pigz_s" -v g="$ft_gz" -v j="$ft_json" -v jc="$ft_json_cpu" -v r="$ref_json" -v jb="$json_bytes" 'BEGIN{
    if (j != "-") printf "plain JSON: %.0f MB/s wall, %.0f MB/s per CPU-second (target >= 1250)\n", jb/j/1e6, jb/jc/1e6;
    if (p != "-" && g != "-") printf ".json.gz end to end vs pigz -dc: %.2fx wall\n", p/g;
    if (r != "-" && j != "-") printf "plain JSON vs reference: %.0fx faster (wall)\n", r/j;
}'
