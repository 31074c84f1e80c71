#!/usr/bin/env bash
# Regenerates tests/analyze/: the CSV fixtures (tests/analyze/gen_fixtures.py, seeded) and, for each
# case in tests/analyze/cases.txt, the reference's stdout, stderr and exit status
# (<name>.stdout/.stderr/.code) from the reference analyze_trace.py.
# Usage: FLINCH_REFERENCE=DIR scripts/golden/analyze.sh   (DIR holds analyze_trace.py and nvml_trace.py)
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/reference.sh
REF=$(reference_require analyze_trace.py)
dir=tests/analyze
python3 "$dir/gen_fixtures.py" "$dir"
# A file recorded by the reference nvml_trace.py itself (fake pynvml, real threads and FIFO marks).
# Timing-dependent, so it is recorded only when missing: delete it to record a new one.
rec="$dir/nvml_trace_recorded.csv"
if [ ! -f "$rec" ]; then
  fifo=$(mktemp -u); mkfifo "$fifo"
  PYTHONPATH="$dir/fake_pynvml" python3 "$(dirname "$REF")/nvml_trace.py" --out "$rec" --seconds 1.3 \
    --interval-ms 10 --marks-fifo "$fifo" --no-rapl &
  sleep 0.45; echo step_start >"$fifo"; sleep 0.4; echo step_end >"$fifo"
  wait; rm -f "$fifo"
fi
grep -v '^#' "$dir/cases.txt" | while IFS='|' read -r name csv args; do
  [ -n "$name" ] || continue
  set +e
  # shellcheck disable=SC2086
  python3 "$REF" --csv "$dir/$csv" $args >"$dir/$name.stdout" 2>"$dir/$name.stderr"
  echo $? >"$dir/$name.code"
  set -e
done
echo "regenerated $(grep -vc '^#' "$dir/cases.txt") golden cases in $dir"
