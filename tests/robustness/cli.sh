#!/usr/bin/env bash
# Adversarial command lines (docs/cli.md, "Exit status"): every numeric option of every subcommand
# given a negative, a NaN and a huge value, and options that conflict, must exit 2 with one message
# naming the option (never clap's "unexpected argument"), before any input is read or any output
# written; input errors exit 1.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${FLINCH_BIN:-target/debug/flinch-trace}
[[ $bin = /* ]] || bin=$root/$bin
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$root"
passed=0
failed=0
trace=tests/traces/HolisticTraceAnalysis/backward_thread.json
csv=tests/analyze/pause.csv
out="$tmp/never.csv"

# expect STATUS NEEDLE ARGS...: the exit status, and NEEDLE in stderr (nothing on stdout, no
# "unexpected argument", no file at $out).
expect() {
  local want=$1 needle=$2
  shift 2
  local code=0
  timeout 20 env -u FLINCH_MARKS "$bin" "$@" >"$tmp/stdout" 2>"$tmp/stderr" || code=$?
  if [[ $code == "$want" ]] && { [[ -z $needle ]] || grep -qF -- "$needle" "$tmp/stderr"; } && [[ ! -s $tmp/stdout || $want == 0 ]] \
    && ! grep -q "unexpected argument" "$tmp/stderr" && [[ ! -e $out ]]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL: flinch-trace $* -> $code (want $want, '$needle'): $(head -c 300 "$tmp/stderr")" >&2
  fi
}

record=(record --no-rapl --no-host --seconds 0.05 --out "$out")
options=(
  "trace $trace|--top" "trace $trace|--min-gap-ms" "trace $trace|--top-pauses"
  "merge $trace|--top"
  "analyze --csv $csv --json|--occurrence" "analyze --csv $csv --json|--max-gap-ms"
  "web --dir /nonexistent|--port"
  "${record[*]}|--metrics-windows" "${record[*]}|--gpu" "${record[*]}|--interval-ms"
  "${record[*]}|--host-interval-ms" "${record[*]}|--host-jsonl-interval-ms"
  "record --no-rapl --no-host --out $out|--seconds"
)
for entry in "${options[@]}"; do
  read -r -a before <<<"${entry%%|*}"
  option=${entry##*|}
  for value in -5 -0.5 nan -inf 1e300 99999999999999999999999999; do
    expect 2 "$option" "${before[@]}" "$option" "$value"
    expect 2 "$option" "${before[@]}" "$option=$value"
  done
done
for value in nan 1.5 99999999999999999999999999; do
  expect 2 --gpu analyze --csv "$csv" --json --gpu "$value"
done
for value in nan -x 1e3 99999999999999999999999999; do
  expect 2 --clock-offset-ms trace "$trace" --clock-offset-ms "$value"
done
expect 2 --gpu-map trace "$trace" --gpu-map 0:3
expect 2 "either --seconds or a command" record --seconds 1 --out "$out" -- true
expect 2 "lists a GPU twice" record --gpu 0,0 --seconds 0.05 --out "$out"
expect 2 --mergeable trace "$trace" --json --mergeable --pauses
expect 2 --perfetto trace "$trace" "$trace" --telemetry "$csv" --perfetto "$tmp/x.json"
expect 2 stdin merge - -
expect 2 "--start and --end" analyze --csv "$csv" --start a
expect 2 "empty label" mark "" --fifo "$tmp/none"
expect 2 FLINCH_MARKS mark x
# clap's own usage error (an unknown option is "unexpected" there, rightly): 2 as well.
code=0
timeout 20 "$bin" trace "$trace" --no-such-option >/dev/null 2>&1 || code=$?
if [[ $code == 2 ]]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL: unknown option -> $code" >&2; fi
# Input errors: 1; edges of the ranges: 0.
expect 1 /nonexistent trace /nonexistent/t.json
expect 1 /nonexistent analyze --csv /nonexistent/t.csv --json
expect 1 "--gpu -1" analyze --csv "$csv" --json --gpu -1
expect 0 "" trace "$trace" --min-gap-ms 0 --top 0 --top-pauses 0 --json
expect 0 "" analyze --csv "$csv" --json --max-gap-ms 0

echo "robustness cli: $passed passed, $failed failed"
[[ $failed == 0 ]]
