#!/usr/bin/env bash
# Compares two flinch-trace binaries on `analyze` (for refactors that must not change output or cost):
#   bytes: stdout, stderr and exit code of every tests/analyze case and of every fixture and example
#          under --json, --spans, gap, GPU and mark-pair variants (plus any CSV given), must be identical;
#   ir:    callgrind instruction counts (all threads) per mode on one CSV, NEW / BASE.
# Usage: scripts/dev/compare-analyze.sh bytes BASE NEW [extra.csv ...]
#        scripts/dev/compare-analyze.sh ir BASE NEW CSV        (needs valgrind)
set -uo pipefail
cd "$(dirname "$0")/../.."
what=${1:?bytes or ir}; BASE=${2:?base binary}; NEW=${3:?new binary}; shift 3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT

if [ "$what" = ir ]; then
  CSV=${1:?csv}
  command -v valgrind >/dev/null || { echo "valgrind not found" >&2; exit 2; }
  for m in "--start begin --end end" "--start step_start --end step_end --json" "--json" "--spans"; do
    line=$(printf '%-42s' "$m")
    for b in "$BASE" "$NEW"; do
      # shellcheck disable=SC2086
      valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" "$b" analyze --csv "$CSV" $m >/dev/null 2>&1
      ir=$(grep -h '^summary:' "$tmp"/cg.out* | awk '{s += $2} END {printf "%.0f", s}')
      rm -f "$tmp"/cg.out*
      line="$line $(printf '%14s' "$ir")"
      eval "last_$([ "$b" = "$BASE" ] && echo base || echo new)=$ir"
    done
    # shellcheck disable=SC2154
    echo "$line  new/base $(echo "scale=4; $last_new / $last_base" | bc)"
  done
  exit 0
fi

n=0; bad=0
case_() { # csv, args...
  local csv=$1; shift
  "$BASE" analyze --csv "$csv" "$@" >"$tmp/a.out" 2>"$tmp/a.err"; local ca=$?
  "$NEW" analyze --csv "$csv" "$@" >"$tmp/b.out" 2>"$tmp/b.err"; local cb=$?
  n=$((n + 1))
  if [ $ca != $cb ] || ! cmp -s "$tmp/a.out" "$tmp/b.out" || ! cmp -s "$tmp/a.err" "$tmp/b.err"; then
    bad=$((bad + 1)); echo "DIFFER: analyze --csv $csv $*"; diff "$tmp/a.out" "$tmp/b.out" | head -5
  fi
}
while IFS='|' read -r name csv args; do
  [ -z "$name" ] && continue
  # shellcheck disable=SC2086
  case_ "tests/analyze/$csv" $args
  # shellcheck disable=SC2086
  case_ "tests/analyze/$csv" $args --json
done < <(grep -v '^#' tests/analyze/cases.txt)
for csv in tests/analyze/*.csv tests/record/*.csv examples/*/*.csv "$@"; do
  case_ "$csv" --json
  case_ "$csv" --spans
  case_ "$csv" --json --spans --max-gap-ms 50
  case_ "$csv" --json --gpu 1 --power-source instant
  labels=$(awk -F, 'NR==1{for(i=1;i<=NF;i++) if($i=="label") L=i; next} /,MARK,/{print $L}' "$csv" |
    grep -v '[^A-Za-z0-9_.-]' | sort -u | head -5)
  for s in $labels; do for e in $labels; do
    case_ "$csv" --start "$s" --end "$e" --json
    case_ "$csv" --start "$s" --end "$e" --json --occurrence 2 --max-gap-ms 100
  done; done
done
echo "cases: $n, differing: $bad"
[ "$bad" = 0 ]
