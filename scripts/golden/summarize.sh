#!/usr/bin/env bash
# Regenerates the summarize golden files from the Python reference (see tests/README.md).
# Usage: scripts/golden/summarize.sh [--cases]   (--cases also rewrites the input runs folders)
# Needs FLINCH_REFERENCE=DIR, the folder holding summarize_host_telemetry.py.
set -euo pipefail
cd "$(dirname "$0")/../.."
source scripts/reference.sh
REF=$(reference_require summarize_host_telemetry.py)
REF=$(dirname "$REF")
if [ "${1:-}" = "--cases" ]; then
    python3 tests/summarize/make_cases.py
fi
GOLDEN="$PWD/tests/summarize/golden"
mkdir -p "$GOLDEN"
cd tests/summarize/cases
# name | --runs as given | extra flags. The runs argument is spelled several ways on purpose:
# `source` strings are formed from it as Python's str(Path) forms them.
# A case X.clean (the reference crashes on X) runs from a scratch copy named X, so that its
# `source` strings are those of X.
SCRATCH="$(mktemp -d)"
trap 'rm -rf "$SCRATCH"' EXIT
while IFS='|' read -r name runs flags; do
    dir="$PWD"
    if [ "${runs%.clean}" != "$runs" ]; then
        cp -r "$runs" "$SCRATCH/${runs%.clean}"
        dir="$SCRATCH"
        runs="${runs%.clean}"
    fi
    # shellcheck disable=SC2086
    (cd "$dir" && python3 "$REF/summarize_host_telemetry.py" --runs "$runs" --out "$GOLDEN/$name.json" $flags) \
        > "$GOLDEN/$name.stdout"
    # Trace duration sums and busy unions: exact (Decimal), not the reference's float sums.
    python3 ../exact_trace_sums.py "$GOLDEN/$name.json" "$dir"
    echo "golden: $name"
done <<'CASES'
basic|basic/|
basic-skip|./basic|--skip-traces
oddvalues|oddvalues|
crashes.clean|crashes.clean|--skip-traces
traces|traces|
tracecrash.clean|tracecrash.clean|
CASES
