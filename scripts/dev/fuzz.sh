#!/usr/bin/env bash
# Runs every cargo-fuzz target in fuzz/ for a bounded time each (default 60 s).
# Usage: scripts/dev/fuzz.sh [SECONDS] [TARGET...]
# Needs nightly and cargo-fuzz (scripts/setup.sh installs cargo-fuzz 0.13.2). Crashes land in
# fuzz/artifacts/<target>/ and make this script fail; the corpus grows in fuzz/corpus/<target>/
# (both git-ignored). A dictionary in fuzz/dict/<target>.dict is used when present.
set -euo pipefail
cd "$(dirname "$0")/../.."

SECONDS_EACH=${1:-60}
shift || true
if (($# > 0)); then
    targets=("$@")
else
    mapfile -t targets < <(cd fuzz && cargo +nightly fuzz list)
fi

# Seed corpora: a few valid streams, so the fuzzer starts past the magic check.
mkdir -p fuzz/corpus/gzip
if [[ ! -e fuzz/corpus/gzip/seed-multi ]]; then
    # 4 knob bytes (see fuzz_targets/gzip.rs), then two gzip members.
    { printf '\x10\x00\x10\x07'; printf 'hello hello hello' | gzip -n; printf '{"traceEvents":[]}' | gzip -n -9; } >fuzz/corpus/gzip/seed-multi
    { printf '\x01\x01\x00\x03'; printf 'x' | gzip -n; printf '\0\0\0'; } >fuzz/corpus/gzip/seed-padded
fi

# Scanner seeds: 3 knob bytes (see fuzz_targets/scanner.rs), then a small real trace.
mkdir -p fuzz/corpus/scanner
if [[ ! -e fuzz/corpus/scanner/seed-simple ]]; then
    { printf '\x00\x07\x05'; cat tests/traces/speedscope/simple-object.json; } >fuzz/corpus/scanner/seed-simple
    { printf '\x01\x03\x09'; cat tests/traces/catapult/nanoseconds.json; } >fuzz/corpus/scanner/seed-bounded
    { printf '\x00\x20\x01'; gzip -dc tests/traces/HolisticTraceAnalysis/triton_example.json.gz | head -c 4000; } >fuzz/corpus/scanner/seed-kineto
fi

# Join seed: a trace with a pause and host work, a NUL, then a two-GPU trace.csv on the same clock
# (see fuzz_targets/join.rs).
mkdir -p fuzz/corpus/join
if [[ ! -e fuzz/corpus/join/seed-pair ]]; then
    {
        printf '%s' '{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1000,"dur":100},{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":8,"ts":2000,"dur":100},{"ph":"X","cat":"user_annotation","name":"s","pid":9,"tid":9,"ts":900,"dur":1500},{"ph":"X","cat":"cpu_op","name":"c","pid":9,"tid":9,"ts":1200,"dur":300}],"baseTimeNanoseconds":0}'
        printf '\0'
        printf 't_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index,gpu_energy_mJ\n'
        printf '1,1000000,SAMPLE,,100,50,,,,,0,5\n2,1500000,SAMPLE,,300,90,,,,,1,9\n3,2100000,SAMPLE,,120,0,,,,7,0,12\n4,1200000,MARK,m,,,,,,,,\n'
    } >fuzz/corpus/join/seed-pair
fi
# Join seed with the trace's own power counters (PyTorch's and flinch-trace's), one bad, and a
# recording beside them.
if [[ ! -e fuzz/corpus/join/seed-counters ]]; then
    {
        printf '%s' '{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1000,"dur":100},{"ph":"C","name":"Power (W)","pid":"GPU 0 Counters","ts":1050,"args":{"":200}},{"ph":"C","name":"SM Active (%)","pid":"GPU 0 Counters","ts":1050,"args":{"":90}},{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":8,"ts":2000,"dur":100},{"ph":"C","name":"Power (W)","pid":"GPU 0 Counters","ts":1500,"args":{"":NaN}},{"ph":"C","name":"GPU 1 power","pid":1,"ts":1500,"args":{"W":150}},{"ph":"C","name":"Power (W)","pid":"GPU 0 Counters","ts":1400,"args":{"":100}},{"ph":"X","cat":"user_annotation","name":"s","pid":9,"tid":9,"ts":900,"dur":1500}],"baseTimeNanoseconds":0}'
        printf '\0'
        printf 't_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_index\n1,1000000,SAMPLE,,100,50,0\n2,2100000,SAMPLE,,120,0,0\n'
    } >fuzz/corpus/join/seed-counters
fi

# gzip_diff seeds: 1 knob byte (chunk size), then gzip streams (with padding, with garbage).
mkdir -p fuzz/corpus/gzip_diff
if [[ ! -e fuzz/corpus/gzip_diff/seed-multi ]]; then
    { printf '\x03'; printf 'hello hello hello' | gzip -n; printf '{"traceEvents":[]}' | gzip -n -9; } >fuzz/corpus/gzip_diff/seed-multi
    { printf '\x00'; printf 'x' | gzip -n; printf '\0\0\0'; } >fuzz/corpus/gzip_diff/seed-padded
    { printf '\x01'; head -c 3000 tests/analyze/pause.csv | gzip -n; printf 'trailing'; } >fuzz/corpus/gzip_diff/seed-garbage
fi

# Analyzer seeds: 3 knob bytes (see fuzz_targets/analyzer.rs), then a trace.csv, a trace, a .gz.
mkdir -p fuzz/corpus/analyzer
if [[ ! -e fuzz/corpus/analyzer/seed-csv ]]; then
    { printf '\x82\x85\x07'; head -c 6000 tests/analyze/pause.csv; } >fuzz/corpus/analyzer/seed-csv
    { printf '\x00\x03\x02'; cat tests/traces/catapult/nanoseconds.json; } >fuzz/corpus/analyzer/seed-trace
    { printf '\x00\x01\x10'; head -c 4000 tests/analyze/multi_gpu.csv | gzip -n; } >fuzz/corpus/analyzer/seed-csv-gz
fi

# summarize_rows seeds: 2 knob bytes (see fuzz_targets/summarize_rows.rs), then telemetry lines
# (and requests lines after a 0xFF byte).
mkdir -p fuzz/corpus/summarize_rows
if [[ ! -e fuzz/corpus/summarize_rows/seed2-alpha ]]; then
    { printf '\x05\x40'; head -c 3000 tests/summarize/cases/basic/alpha-host/telemetry.jsonl; } >fuzz/corpus/summarize_rows/seed2-alpha
    { printf '\x01\x02'; printf '{"unix": 1e400, "host_memory": {"available": NaN, "used": 1}}\r\n{"unix": 2}\r'; } >fuzz/corpus/summarize_rows/seed2-odd
fi

# merge seeds: two mergeable summaries separated by a NUL (see fuzz_targets/merge.rs).
mkdir -p fuzz/corpus/merge
if [[ ! -e fuzz/corpus/merge/seed-two ]]; then
    {
        printf '%s' '{"mergeable":{"version":1,"scale":8,"ranks":[{"source":"a","events":3,"duration_events":2,"duration_sum_ns":30,"bytes":99,"truncated":false,"busy_union_ns":20,"busy_union_error_bound_ns":0,"busy_union_ns_by_category":{"k":20},"warnings":["w"]}],"categories":[{"name":"k","events":2,"duration_sum_ns":30}],"phase_counts":{"X":2,"i":1},"warning_counts":{"scanner":{"bad_numbers":0}},"ops_folded_into_other":false,"categories_folded_into_other":false,"ops":[{"category":"k","name":"op","n":2,"duration_sum_ns":30,"min_ns":0,"max_ns":30,"histogram":{"zero_count":1,"buckets":[[1256,1]]}}]}}'
        printf '\0'
        printf '%s' '{"mergeable":{"version":1,"scale":3,"ranks":[{"source":"b","events":1,"duration_events":1,"duration_sum_ns":7,"bytes":9,"truncated":true,"busy_union_ns":7,"busy_union_error_bound_ns":2,"busy_union_ns_by_category":{"k":7},"warnings":[]}],"categories":[{"name":"k","events":1,"duration_sum_ns":7}],"phase_counts":{"X":1},"warning_counts":{},"ops_folded_into_other":true,"categories_folded_into_other":false,"ops":[{"category":"k","name":"op","n":1,"duration_sum_ns":7,"min_ns":7,"max_ns":7,"histogram":null}]}}'
    } >fuzz/corpus/merge/seed-two
fi

# No sanitizer: flinch-core forbids unsafe code, so AddressSanitizer adds build time and halves the
# execution rate without finding anything a panic would not; libFuzzer still catches panics,
# hangs (-timeout) and memory blow-ups (-rss_limit_mb).
FUZZ=(cargo +nightly fuzz)
"${FUZZ[@]}" build -O --sanitizer none
for t in "${targets[@]}"; do
    dict=()
    [[ -f fuzz/dict/$t.dict ]] && dict=(-dict="fuzz/dict/$t.dict")
    mkdir -p "fuzz/corpus/$t"
    echo "== fuzz $t for ${SECONDS_EACH}s"
    set +e
    "${FUZZ[@]}" run -O --sanitizer none "$t" "fuzz/corpus/$t" -- -max_total_time="$SECONDS_EACH" -timeout=10 \
        -rss_limit_mb=1024 "${dict[@]}" >"fuzz/last-$t.log" 2>&1
    rc=$?
    set -e
    grep -E '^(Done [0-9]+ runs|==[0-9]+==|SUMMARY)|panicked|artifact_prefix|Test unit' "fuzz/last-$t.log" || true
    if [[ $rc -ne 0 ]]; then
        echo "fuzz: target $t failed (see fuzz/artifacts/$t/)" >&2
        exit 1
    fi
done
echo "fuzz: every target ran ${SECONDS_EACH}s without a crash"
