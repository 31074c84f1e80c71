#!/usr/bin/env bash
# Regenerates tests/traces/**/<file>.expected.json for every trace fixture:
#   "reference": what the reference summarize_host_telemetry.py trace_summary() returns (or
#                {"error": ...} where it fails: bare arrays, truncation);
#   "exact":     what scripts/golden/trace-exact.py (Decimal / integer-ns oracle) computes.
# native/tests/trace_cli.rs compares `flinch-trace trace --json` with both.
# Usage: FLINCH_REFERENCE=DIR scripts/golden/traces.sh   (DIR holds summarize_host_telemetry.py)
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/reference.sh
REF=$(reference_require summarize_host_telemetry.py)
REF=$(dirname "$REF")
find tests/traces -type f \( -name '*.json' -o -name '*.gz' \) ! -name '*.expected.json' | sort | while read -r f; do
  ref=$(python3 - "$REF" "$f" <<'PY'
import json, sys
from pathlib import Path
sys.path.insert(0, sys.argv[1])
from summarize_host_telemetry import trace_summary
try:
    print(json.dumps(trace_summary(Path(sys.argv[2]))))
except Exception as e:  # the reference fails on bare arrays and truncation
    print(json.dumps({"error": repr(e)}))
PY
)
  exact=$(python3 scripts/golden/trace-exact.py "$f")
  printf '{"reference": %s,\n "exact": %s}\n' "$ref" "$exact" > "$f.expected.json"
  echo "wrote $f.expected.json"
done
