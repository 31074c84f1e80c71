#!/usr/bin/env bash
# The firmware image against native `flinch-trace analyze`, byte for byte: for each case, the
# image under QEMU (scripts/dev/embedded.sh CSV START END) must print native's stdout followed by
# the verdict line native's --json gives (`verdict=compute`, `verdict=mixed (indicative)`,
# `verdict=none`), native's stderr, and exit with native's status.
# Cases: tests/analyze/cases.txt (including the H200 example), every ordered pair of distinct
# mark labels of each tests/analyze/*.csv (so reversed and missing marks too), and a missing file.
# Prints "N passed, M failed"; fails on any difference. Needs python3 (reads the --json verdict).
set -euo pipefail
cd "$(dirname "$0")/../.."

cargo build -q -p flinch-trace
native=${CARGO_TARGET_DIR:-target}/debug/flinch-trace
(cd embedded && cargo build -q --release --locked --target thumbv7em-none-eabihf)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

verdict_line() {
    python3 -c '
import json, sys
v = json.load(sys.stdin)["window"]["verdict"]
d = v["verdict"]
print("verdict=" + ("none" if d is None else d if v["confident"] else d + " (indicative)"))'
}

passed=0
failed=0
check() {
    local csv=$1 start=$2 end=$3 what="$1 $2..$3"
    local ncode=0 mcode=0
    "$native" analyze --csv "$csv" --start "$start" --end "$end" >"$tmp/want.out" 2>"$tmp/want.err" || ncode=$?
    if ((ncode == 0)); then
        "$native" analyze --csv "$csv" --start "$start" --end "$end" --json 2>/dev/null |
            verdict_line >>"$tmp/want.out"
    fi
    scripts/dev/embedded.sh "$csv" "$start" "$end" >"$tmp/got.out" 2>"$tmp/got.err" || mcode=$?
    local bad=""
    cmp -s "$tmp/want.out" "$tmp/got.out" || bad+=" stdout"
    cmp -s "$tmp/want.err" "$tmp/got.err" || bad+=" stderr"
    ((ncode == mcode)) || bad+=" status($ncode vs $mcode)"
    if [[ -z $bad ]]; then
        passed=$((passed + 1))
    else
        failed=$((failed + 1))
        echo "FAIL $what:$bad"
        diff "$tmp/want.out" "$tmp/got.out" | sed 's/^/  stdout /' || true
        diff "$tmp/want.err" "$tmp/got.err" | sed 's/^/  stderr /' || true
    fi
}

# The CLI golden cases.
while IFS='|' read -r _name csv args; do
    [[ -z $csv || $csv == \#* ]] && continue
    read -r _s start _e end <<<"$args"
    check "tests/analyze/$csv" "$start" "$end"
done < <(grep -v '^#' tests/analyze/cases.txt)

# Every ordered pair of distinct labels of each fixture.
for csv in tests/analyze/*.csv; do
    mapfile -t labels < <(python3 -c '
import csv, sys
seen = []
for row in csv.DictReader(open(sys.argv[1], newline="")):
    if row.get("row_type") == "MARK" and row["label"] not in seen:
        seen.append(row["label"])
print("\n".join(seen))' "$csv")
    for s in "${labels[@]}"; do
        for e in "${labels[@]}"; do
            [[ -n $s && -n $e && $s != "$e" ]] && check "$csv" "$s" "$e"
        done
    done
done

# A sidecar whose first key mentioning "power" names another source than its GPU's
# `gpu_power_w_source`: both programs follow flinch-core's rule (the GPU's), which changes the verdict.
cp tests/analyze/appended.csv "$tmp/sidecar.csv"
printf '%s\n' '{"power_source":"average","gpus":[{"gpu_power_w_source":"instant"}]}' >"$tmp/sidecar.csv.meta.json"
check "$tmp/sidecar.csv" step_start step_end

# A file that is not there.
check tests/analyze/no-such-file.csv a b

echo "embedded vs native analyze: $passed passed, $failed failed"
((failed == 0))
