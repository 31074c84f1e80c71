#!/usr/bin/env bash
# Output files are never an input and never left cut (docs/robustness.md, "Output files"):
# `trace --perfetto` and `summarize --out` onto an input (the same path, a hard link, a symbolic
# link), onto a FIFO or a folder; SIGINT and SIGTERM during the write of a large .json.gz; a full
# tmpfs (mounted here when this runs as root, else skipped with the reason); `ulimit -f`.
# Each case checks the exit status, the message, that the inputs are unchanged, and that neither
# the target nor a temporary file is left behind.
#
# Usage: tests/robustness/outputs.sh   (FLINCH_BIN: the binary, default target/debug/flinch-trace)
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${FLINCH_BIN:-target/debug/flinch-trace}
BIN=$(realpath "$BIN")
T=$(mktemp -d)
MNT=$T/small
cleanup() {
    if mountpoint -q "$MNT" 2>/dev/null; then umount "$MNT" || true; fi
    rm -rf "$T"
}
trap cleanup EXIT

passed=0
failed=0
ok() { passed=$((passed + 1)); echo "ok   $1"; }
bad() { failed=$((failed + 1)); echo "FAIL $1"; }

BASE=1764000000000000000
# A trace of $1 kernel events with a baseTimeNanoseconds.
gen_trace() {
    awk -v n="$1" -v base="$BASE" 'BEGIN {
        printf "{\"traceEvents\":[\n"
        for (i = 0; i < n; i++) {
            if (i) printf ",\n"
            printf "{\"ph\":\"X\",\"cat\":\"kernel\",\"name\":\"kernel_%d\",\"pid\":0,\"tid\":%d,\"ts\":%d.5,\"dur\":%d}", i % 97, i % 7, 1000000 + i * 10, 3 + i % 5
        }
        printf "\n],\"baseTimeNanoseconds\":%s}\n", base
    }'
}
gen_recording() {
    echo "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index"
    for ((k = 0; k < 200; k++)); do
        t=$((1000000000 + k * 10000000))
        echo "$t,$((BASE + t)),SAMPLE,,300,90,,,,,0"
    done
}

# No file left in folder $1 but those named after it.
only() {
    local dir=$1
    shift
    local got want
    got=$(cd "$dir" && ls -A | sort | tr '\n' ' ')
    want=$(printf '%s\n' "$@" | sed '/^$/d' | sort | tr '\n' ' ')
    [[ "$got" == "$want" ]]
}

# Runs the rest of the line, bounded; stderr in $T/err, status in $rc. The inputs of the first
# cases are put back first (in place, keeping their links), so one defect fails one case only.
run() {
    if [[ -f $T/t.orig ]]; then
        cp "$T/t.orig" "$S/t.json"
        cp "$T/rec.orig" "$S/rec.csv"
    fi
    rc=0
    timeout 60 "$@" >"$T/out" 2>"$T/err" || rc=$?
}

S=$T/same
mkdir -p "$S"
gen_trace 50 >"$S/t.json"
gen_recording >"$S/rec.csv"
cp "$S/t.json" "$T/t.orig"
cp "$S/rec.csv" "$T/rec.orig"
ln "$S/t.json" "$S/hard.json"
ln -s rec.csv "$S/soft.json"

# 1-3: onto an input, by path, hard link and symbolic link.
for out in rec.csv hard.json soft.json; do
    run "$BIN" trace "$S/t.json" --telemetry "$S/rec.csv" --perfetto "$S/$out"
    if [[ $rc == 1 ]] && grep -q "is the same file as the .*refusing to overwrite an input" "$T/err" &&
        [[ $(wc -l <"$T/err") == 1 ]] && cmp -s "$S/t.json" "$T/t.orig" && cmp -s "$S/rec.csv" "$T/rec.orig"; then
        ok "--perfetto $out (an input) refused, inputs unchanged"
    else
        bad "--perfetto $out (an input): rc $rc: $(head -c 300 "$T/err")"
    fi
done

# 4: summarize --out as a hard link to a file it reads.
R=$T/runs
mkdir -p "$R/a-host"
echo '{"ts": 1.0, "cpu_percent": 5}' >"$R/a-host/telemetry.jsonl"
ln "$R/a-host/telemetry.jsonl" "$T/summary.json"
run "$BIN" summarize --runs "$R" --out "$T/summary.json"
if [[ $rc == 1 ]] && grep -q "is the same file as an input" "$T/err" &&
    [[ $(cat "$R/a-host/telemetry.jsonl") == '{"ts": 1.0, "cpu_percent": 5}' ]]; then
    ok "summarize --out (a hard link to telemetry.jsonl) refused, input unchanged"
else
    bad "summarize --out onto an input: rc $rc: $(head -c 300 "$T/err")"
fi

# 5-6: a FIFO and a folder are refused at once (no hang on the FIFO).
mkfifo "$T/fifo"
for out in "$T/fifo" "$T"; do
    run "$BIN" trace "$S/t.json" --telemetry "$S/rec.csv" --perfetto "$out"
    if [[ $rc == 1 ]] && grep -Eq "is a (FIFO|directory)" "$T/err"; then
        ok "--perfetto $(basename "$out") (not a regular file) refused"
    else
        bad "--perfetto $(basename "$out"): rc $rc: $(head -c 300 "$T/err")"
    fi
done

# 7: a character device is written directly.
run "$BIN" trace "$S/t.json" --telemetry "$S/rec.csv" --perfetto /dev/null
if [[ $rc == 0 ]]; then ok "--perfetto /dev/null written"; else bad "--perfetto /dev/null: rc $rc: $(head -c 300 "$T/err")"; fi

# 8: ulimit -f: a clear error (EFBIG), no file left, exit 1 (not a silent 153).
M=$T/medium
mkdir -p "$M/out"
gen_trace 20000 >"$M/t.json"
gen_recording >"$M/rec.csv"
rc=0
(ulimit -f 256 && exec timeout 120 "$BIN" trace "$M/t.json" --telemetry "$M/rec.csv" --perfetto "$M/out/merged.json") \
    >"$T/out" 2>"$T/err" || rc=$?
if [[ $rc == 1 ]] && grep -q "merged.json: cannot write: File too large" "$T/err" && only "$M/out"; then
    ok "ulimit -f: exit 1, 'File too large', nothing left"
else
    bad "ulimit -f: rc $rc, left: $(ls -A "$M/out"): $(head -c 300 "$T/err")"
fi

# 9-10: a full tmpfs: no new file; an existing target kept as it was.
mkdir -p "$MNT"
if mount -t tmpfs -o size=1m flinch-outputs "$MNT" 2>"$T/mount.err"; then
    run "$BIN" trace "$M/t.json" --telemetry "$M/rec.csv" --perfetto "$MNT/merged.json"
    if [[ $rc == 1 ]] && grep -q "No space left on device" "$T/err" && only "$MNT"; then
        ok "full tmpfs: exit 1, ENOSPC, nothing left"
    else
        bad "full tmpfs: rc $rc, left: $(ls -A "$MNT"): $(head -c 300 "$T/err")"
    fi
    echo previous >"$MNT/merged.json"
    run "$BIN" trace "$M/t.json" --telemetry "$M/rec.csv" --perfetto "$MNT/merged.json"
    if [[ $rc == 1 ]] && grep -q "is left as it was" "$T/err" && only "$MNT" merged.json &&
        [[ $(cat "$MNT/merged.json") == previous ]]; then
        ok "full tmpfs: the existing target kept as it was"
    else
        bad "full tmpfs, existing target: rc $rc, left: $(ls -A "$MNT"): $(head -c 300 "$T/err")"
    fi
    umount "$MNT"
else
    echo "skip full tmpfs: cannot mount one ($(head -c 200 "$T/mount.err"))"
fi

# 11-12: SIGINT and SIGTERM while the .json.gz is being written: ended by the signal (128+N),
# no target, no temporary file, the trace unchanged.
B=$T/big
mkdir -p "$B"
gen_trace "${OUTPUTS_BIG_EVENTS:-400000}" >"$B/t.json"
gen_recording >"$B/rec.csv"
size=$(stat -c %s "$B/t.json")
for sig in INT TERM; do
    O=$T/out-$sig
    mkdir -p "$O"
    # Job control on: a background job of a script otherwise starts with SIGINT ignored.
    set -m
    "$BIN" trace "$B/t.json" --telemetry "$B/rec.csv" --perfetto "$O/merged.json.gz" >/dev/null 2>"$T/err" &
    pid=$!
    set +m
    started=0
    for ((i = 0; i < 12000; i++)); do
        if [[ -n $(find "$O" -type f -size +0c) ]]; then
            started=1
            break
        fi
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.01
    done
    kill -s "$sig" "$pid" 2>/dev/null || true
    rc=0
    timeout 30 tail --pid="$pid" -s 0.05 -f /dev/null || rc=124
    wait "$pid" || rc=$?
    want=$((128 + $(kill -l "$sig")))
    if [[ $started == 1 && $rc == "$want" ]] && only "$O" && [[ $(stat -c %s "$B/t.json") == "$size" ]]; then
        ok "SIG$sig during the write: exit $rc, nothing left"
    else
        bad "SIG$sig during the write: started $started, rc $rc (want $want), left: $(ls -A "$O"): $(head -c 300 "$T/err")"
    fi
done

# No temporary file anywhere.
if [[ -z $(find "$T" -name '.*.flinch-*.tmp') ]]; then ok "no temporary file left"; else bad "temporary files left: $(find "$T" -name '.*.flinch-*.tmp')"; fi

echo "robustness outputs: $passed passed, $failed failed"
[[ $failed == 0 ]]
