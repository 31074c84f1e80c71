#!/usr/bin/env bash
# Benchmark: `flinch-trace analyze` vs reference analyze_trace.py on a generated 10 M-row trace.csv
# (~760 MB, deterministic: native/examples/gen_csv.rs, seed 42), side by side with /usr/bin/time -v.
# Usage: scripts/bench/analyze.sh [ROWS]
# Env: FLINCH_REFERENCE=DIR (the folder holding analyze_trace.py; without it only flinch-trace is timed),
#      BENCH_DIR (default /tmp/flinch-bench), SKIP_REFERENCE=1 to time only flinch-trace.
set -euo pipefail
cd "$(dirname "$0")/../.."
ROWS=${1:-10000000}
source scripts/reference.sh
REF=""
[ "${SKIP_REFERENCE:-0}" = 1 ] || REF=$(reference_optional analyze_trace.py)
DIR=${BENCH_DIR:-/tmp/flinch-bench}
mkdir -p "$DIR"
CSV="$DIR/trace-$ROWS.csv"
cargo build --release -q -p flinch-trace --bin flinch-trace --example gen_csv
BIN=target/release/flinch-trace
[ -f "$CSV" ] || target/release/examples/gen_csv "$ROWS" "$CSV" 42
echo "file: $CSV ($(stat -c %s "$CSV") bytes, $ROWS rows); machine: $(nproc) cores, $(uname -m); load: $(cut -d' ' -f1-3 /proc/loadavg)"

measure() { # name, then the command
  local name=$1; shift
  /usr/bin/time -v "$@" >"$DIR/$name.out" 2>"$DIR/$name.time" || true
  local wall rss user sys
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/{print $2}' "$DIR/$name.time")
  rss=$(awk -F': ' '/Maximum resident set size/{print $2}' "$DIR/$name.time")
  user=$(awk -F': ' '/User time/{print $2}' "$DIR/$name.time")
  sys=$(awk -F': ' '/System time/{print $2}' "$DIR/$name.time")
  printf '%-28s wall %-10s user %-8s sys %-7s peak RSS %8.1f MiB\n' "$name" "$wall" "$user" "$sys" "$(echo "$rss/1024" | bc -l)"
}
secs() { awk -F: '{ if (NF==3) print $1*3600+$2*60+$3; else print $1*60+$2 }' <<<"$1"; }

cat /dev/null "$CSV" >/dev/null  # warm the page cache for both
measure flinch-three-lines "$BIN" analyze --csv "$CSV" --start begin --end end
# The same on one CPU (analyze splits and parses on a second thread only when two are available).
if command -v taskset >/dev/null; then
  measure flinch-three-lines-1cpu taskset -c 0 "$BIN" analyze --csv "$CSV" --start begin --end end
fi
measure flinch-json-window "$BIN" analyze --csv "$CSV" --start step_start --end step_end --json
measure flinch-json-recording "$BIN" analyze --csv "$CSV" --json
if [ -n "$REF" ]; then
  measure reference "python3" "$REF" --csv "$CSV" --start begin --end end
  if cmp -s "$DIR/flinch-three-lines.out" "$DIR/reference.out"; then echo "three lines: identical"; else
    echo "three lines: DIFFER"; diff "$DIR/flinch-three-lines.out" "$DIR/reference.out" || true; fi
  fw=$(awk -F': ' '/Elapsed/{print $2}' "$DIR/flinch-three-lines.time")
  rw=$(awk -F': ' '/Elapsed/{print $2}' "$DIR/reference.time")
  echo "speed-up (wall, three-line mode): $(echo "$(secs "$rw") / $(secs "$fw")" | bc -l | cut -c1-6)x"
  cpu() { awk -F': ' '/User time|System time/{s+=$2} END{print s}' "$DIR/$1.time"; }
  echo "speed-up (CPU user+sys, three-line mode): $(echo "$(cpu reference) / $(cpu flinch-three-lines)" | bc -l | cut -c1-6)x"
fi
cat "$DIR/flinch-three-lines.out"
