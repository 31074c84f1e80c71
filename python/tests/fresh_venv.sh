#!/usr/bin/env bash
# `pip install ./python` in a fresh virtual environment (nothing but pip in it; pip fetches the
# build backend, maturin, into its own isolated build environment), then checks that the installed
# package imports, ships its type stubs and `py.typed`, and gives the command line's JSON byte for
# byte on a bundled real trace. Usage: python/tests/fresh_venv.sh [FLINCH_BIN]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN="${1:-target/debug/flinch-trace}"
VENV=$(mktemp -d)
trap 'rm -rf "$VENV"' EXIT
python3 -m venv "$VENV"
"$VENV/bin/pip" install -q --disable-pip-version-check ./python
TRACE=tests/traces/HolisticTraceAnalysis/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz
"$BIN" trace "$TRACE" --json >"$VENV/cli.json"
"$VENV/bin/python" - "$TRACE" "$VENV/cli.json" <<'PY'
import os, sys
import flinch_trace
trace, cli = sys.argv[1], open(sys.argv[2]).read()
pkg = os.path.dirname(flinch_trace.__file__)
missing = [f for f in ("py.typed", "__init__.pyi") if not os.path.exists(os.path.join(pkg, f))]
if missing:
    sys.exit(f"fresh venv: the installed package lacks {missing}")
got = flinch_trace.trace_summary_json(trace)
if got.rstrip("\n") != cli.rstrip("\n"):
    sys.exit("fresh venv: trace_summary_json differs from `flinch-trace trace --json`")
print(f"fresh venv: flinch_trace imports from {pkg}, ships its stubs, and matches the CLI on {trace}")
PY
