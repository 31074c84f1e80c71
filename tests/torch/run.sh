#!/usr/bin/env bash
# The real-PyTorch step tests (docs/steps.md; docs/testing.md, "PyTorch").
#   1. the oracle's unit tests (when a python with pytest is found);
#   2. a fresh trace from the real PyTorch (make_steps_trace.py, CPU, 22 profiled steps: the data loader stalls
#      in steps 8 and 16, a bare time.sleep in 5 and 12), whose oracle outliers must be exactly those steps with
#      `dataloader` resp. `other` as their largest part; recorded again (3 tries in all) only when a step that
#      should be fast came out slow on a loaded machine;
#   3. the fixtures in tests/fixtures/torch/: the oracle still gives their golden *.steps.json, their truth
#      holds, and `trace --json` reads them whole;
#   4. when `$FLINCH_BIN trace --help` lists `--steps`: `trace T --steps --json` on the fresh trace and on the
#      fixtures against the oracle (check_steps.py compare). Without `--steps` it fails, unless
#      FLINCH_TORCH_ALLOW_NO_STEPS=1;
#   5. `diff A B --steps --json` (docs/diff.md) of the fixtures' pair (B's data loader stalled in known steps)
#      and of a fresh pair whose B has wider layers (check_diff.py): the direction, the parts and ops that
#      moved.
# Env: FLINCH_BIN (default target/debug/flinch-trace), FLINCH_TORCH_ENV (default target/torch-env, made by
# scripts/dev/torch-env.sh), FLINCH_PY_ENV (the pytest venv, default target/py-env),
# FLINCH_TORCH_KEEP=DIR keeps the fresh trace and outputs there.
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN="${FLINCH_BIN:-target/debug/flinch-trace}"
TORCH_ENV="${FLINCH_TORCH_ENV:-target/torch-env}"
PY_ENV="${FLINCH_PY_ENV:-target/py-env}"
HERE=tests/torch
FIX=tests/fixtures/torch

say() { printf '== torch: %s\n' "$*"; }
die() { printf 'FAIL torch: %s\n' "$*" >&2; exit 1; }

[[ -x "$BIN" ]] || die "no flinch-trace at $BIN (cargo build -p flinch-trace, or set FLINCH_BIN)"
"$TORCH_ENV/bin/python" -W ignore -c 'import torch' 2>/dev/null \
  || die "no torch in $TORCH_ENV: run scripts/dev/torch-env.sh $TORCH_ENV (or scripts/setup.sh --torch)"
TORCH_PY="$TORCH_ENV/bin/python"

if [[ -n "${FLINCH_TORCH_KEEP:-}" ]]; then
  work="$FLINCH_TORCH_KEEP"; mkdir -p "$work"
else
  work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fi

# 1. The oracle's own tests.
pytest_py=""
for py in "$PY_ENV/bin/python" python3; do
  if "$py" -c 'import pytest' 2>/dev/null; then pytest_py="$py"; break; fi
done
if [[ -n "$pytest_py" ]]; then
  say "oracle unit tests ($pytest_py -m pytest $HERE)"
  "$pytest_py" -m pytest -q -p no:cacheprovider "$HERE"
else
  say "oracle unit tests skipped: no python with pytest (scripts/setup.sh makes $PY_ENV)"
fi

steps_flag=0
if "$BIN" trace --help 2>/dev/null | grep -q -- '--steps'; then steps_flag=1; fi

compare_steps() { # TRACE ORACLE_JSON NAME
  "$BIN" trace "$1" --steps --json > "$work/$3.flinch.json" || die "$BIN trace $1 --steps --json failed"
  python3 "$HERE/check_steps.py" compare "$work/$3.flinch.json" "$2" || die "$3: trace --steps differs from the oracle"
}

# 2. A fresh trace from the real PyTorch.
torch_version=$("$TORCH_PY" -W ignore -c 'import torch; print(torch.__version__)')
fresh="$work/fresh.json"
for try in 1 2 3; do
  say "recording a fresh trace with torch $torch_version (try $try)"
  start=$(date +%s)
  "$TORCH_PY" -W ignore "$HERE/make_steps_trace.py" "$fresh" --seed "$try" 2> "$work/make.stderr" \
    || { cat "$work/make.stderr" >&2; die "make_steps_trace.py failed"; }
  say "recorded in $(( $(date +%s) - start )) s: $(wc -c < "$fresh") bytes"
  python3 "$HERE/steps_oracle.py" "$fresh" > "$work/fresh.steps.json"
  rc=0
  python3 "$HERE/check_steps.py" truth "$work/fresh.steps.json" "$work/fresh.truth.json" || rc=$?
  [[ $rc -eq 0 ]] && break
  [[ $rc -eq 3 && $try -lt 3 ]] || die "the fresh trace's outliers are not the known stall and sleep steps"
  say "a step that should be fast came out slow (a loaded machine?): recording again"
done
"$BIN" trace "$fresh" --json > "$work/fresh.trace.json" || die "$BIN trace $fresh --json failed"
python3 "$HERE/check_steps.py" summary "$work/fresh.trace.json" "$fresh" || die "trace --json on the fresh trace"

# 3. The fixtures: the oracle reproduces its goldens, the truth holds, trace --json reads them.
shopt -s nullglob
fixtures=("$FIX"/steps_*.json.gz)
[[ ${#fixtures[@]} -gt 0 ]] || die "no fixtures in $FIX"
for f in "${fixtures[@]}"; do
  base="${f%.json.gz}"; name=$(basename "$base")
  say "fixture $name"
  python3 "$HERE/steps_oracle.py" "$f" > "$work/$name.steps.json"
  python3 - "$work/$name.steps.json" "$base.steps.json" <<'EOF' || die "$name: the oracle no longer gives $base.steps.json"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
sys.exit(0 if a == b else 1)
EOF
  python3 "$HERE/check_steps.py" truth "$base.steps.json" "$base.truth.json" || die "$name: truth"
  "$BIN" trace "$f" --json > "$work/$name.trace.json" || die "$BIN trace $f --json failed"
  python3 "$HERE/check_steps.py" summary "$work/$name.trace.json" "$f" || die "$name: trace --json"
done

# 4. flinch-trace's steps against the oracle.
if [[ $steps_flag -eq 1 ]]; then
  say "trace --steps --json against the oracle"
  compare_steps "$fresh" "$work/fresh.steps.json" fresh
  for f in "${fixtures[@]}"; do
    base="${f%.json.gz}"; compare_steps "$f" "$base.steps.json" "$(basename "$base")"
  done
else
  msg="$BIN trace --help lists no --steps: flinch-trace's steps were NOT checked against the oracle"
  if [[ "${FLINCH_TORCH_ALLOW_NO_STEPS:-0}" == 1 ]]; then
    printf '\n!!! torch: %s (FLINCH_TORCH_ALLOW_NO_STEPS=1)\n\n' "$msg" >&2
  else
    die "$msg (set FLINCH_TORCH_ALLOW_NO_STEPS=1 to run the rest alone)"
  fi
fi
# 5. diff --steps of two runs changed in a known way.
say "diff --steps: the fixtures' pair (stalled data loader)"
"$BIN" diff "$FIX/diff_a.json.gz" "$FIX/diff_b_stall.json.gz" --steps --json > "$work/diff_stall.json" \
  || die "$BIN diff --steps on the fixtures' pair failed"
python3 "$HERE/check_diff.py" stall "$work/diff_stall.json" "$FIX/diff_b_stall.truth.json" || die "diff: stalled pair"
say "diff --steps: a fresh pair, B with wider layers (hidden 1024 against 512)"
for side in a:512 b:1024; do
  "$TORCH_PY" -W ignore "$HERE/make_steps_trace.py" "$work/wide_${side%%:*}.json" --stall "" --sleep "" \
    --active 16 --hidden "${side##*:}" 2> "$work/make.stderr" \
    || { cat "$work/make.stderr" >&2; die "make_steps_trace.py failed"; }
done
"$BIN" diff "$work/wide_a.json" "$work/wide_b.json" --steps --json > "$work/diff_wide.json" \
  || die "$BIN diff --steps on the wider pair failed"
python3 "$HERE/check_diff.py" wider "$work/diff_wide.json" || die "diff: wider pair"
say "all passed"
