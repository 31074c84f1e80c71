#!/usr/bin/env bash
# `record --torch-profile` with the real PyTorch (docs/torch-profile.md; docs/testing.md, "PyTorch"):
#   1. train_plain.py (imports neither flinch_trace nor torch.profiler) under `record --torch-profile=2,1,6`:
#      a whole trace beside the recording with its ProfilerStep#N on the recording's clock (each step's Unix
#      start inside that iteration's optimizer.step(), as the program stamped it), the report (the trace job
#      with the recording: the summary, the alignment, energy per annotation) and the Perfetto file;
#   2. --no-report: the same files, nothing on stdout;
#   3. an early end (SystemExit inside the active window): atexit exports what was recorded;
#   4. SIGINT to `record` while the program sleeps inside the active window: a whole trace, no temporary file;
#   5. torch imported but no optimizer: one warning, a normal recording;
#   6. torchrun --standalone --nproc-per-node 2 (no process group; RANK names each trace);
#   7. `with flinch_trace.profile(DIR) as p:` (profile_api.py) with the extension `cargo build -p flinch-py` made.
# CPU only: CUDA activities and torch 2.15's environment counters are armed only where
# torch.cuda.is_available(); that path is not run here.
# Also the bootstrap's unit tests (test_torch_profile.py) when $FLINCH_PY_ENV (default target/py-env) has pytest.
# Env: FLINCH_BIN (default target/debug/flinch-trace), FLINCH_TORCH_ENV (default target/torch-env, made by
# scripts/dev/torch-env.sh), FLINCH_TORCH_KEEP=DIR keeps the outputs there.
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN="${FLINCH_BIN:-target/debug/flinch-trace}"
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"
TORCH_ENV="${FLINCH_TORCH_ENV:-target/torch-env}"
HERE="$PWD/tests/torch"

say() { printf '== torch-profile: %s\n' "$*"; }
die() { printf 'FAIL torch-profile: %s\n' "$*" >&2; exit 1; }

[[ -x "$BIN" ]] || die "no flinch-trace at $BIN (cargo build -p flinch-trace, or set FLINCH_BIN)"
PY="$TORCH_ENV/bin/python"
"$PY" -W ignore -c 'import torch' 2>/dev/null \
  || die "no torch in $TORCH_ENV: run scripts/dev/torch-env.sh $TORCH_ENV (or scripts/setup.sh --torch)"

if [[ -n "${FLINCH_TORCH_KEEP:-}" ]]; then
  work="$FLINCH_TORCH_KEEP"; mkdir -p "$work"
else
  work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
fi
rec() { "$BIN" record --no-rapl --interval-ms 10 "$@"; }
no_tmp() { ! ls -a "$1" | grep -q '\.tmp' || die "temporary files left in $1: $(ls -a "$1")"; }

if [[ -x "${FLINCH_PY_ENV:-target/py-env}/bin/python" ]]; then
  say "0. the bootstrap's unit tests (pytest, a stand-in torch)"
  "${FLINCH_PY_ENV:-target/py-env}/bin/python" -m pytest -q "$HERE/test_torch_profile.py"
fi

say "1. an unchanged training script, the trace on the recording's clock, the report"
d="$work/run1"; mkdir -p "$d"
rec --torch-profile=2,1,6 --out "$d/trace.csv" -- \
  "$PY" "$HERE/train_plain.py" --steps 14 --stall 6 --stall-ms 120 --stamps "$d/stamps.txt" \
  >"$d/report.txt" 2>"$d/err.txt" || { cat "$d/err.txt"; die "record exited $?"; }
[[ -f "$d/trace.torch.json.gz" ]] || { cat "$d/err.txt"; die "no trace.torch.json.gz"; }
[[ -f "$d/trace.torch.perfetto.json.gz" ]] || die "no Perfetto file"
no_tmp "$d"
"$PY" "$HERE/check_record_profile.py" clock "$d/trace.torch.json.gz" "$d/stamps.txt" "$d/trace.csv"
grep -q 'alignment: baseTimeNanoseconds' "$d/report.txt" || die "the report has no alignment: $(cat "$d/report.txt")"
grep -q 'ProfilerStep#' "$d/report.txt" || die "the report names no ProfilerStep"
# The stalled iteration (6) sleeps 120 ms before its optimizer step, inside ProfilerStep#5: checked in the
# step view where `trace --steps` exists, else in the annotation rows.
steps_flag=""
if "$BIN" trace --help | grep -q -- '--steps'; then steps_flag="--steps"; fi
"$BIN" trace "$d/trace.torch.json.gz" --telemetry "$d/trace.csv" --json $steps_flag >"$d/join.json"
"$PY" - "$d/join.json" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
a = j["alignment"]
assert a["source"] == "baseTimeNanoseconds", a
assert a["trace_covered_share"] == 1.0, a
# The stall is certain to lie inside ProfilerStep#5 (a busy machine may slow other steps too).
if "steps" in j:
    s5 = [s for s in j["steps"] if s["index"] == 5][0]
    assert s5["duration_ms"] >= 120 and s5["breakdown_ms"]["other"] >= 120, s5
    print("steps: ProfilerStep#5 holds the 120 ms stall, in `other`")
else:
    s5 = [r for r in j["annotation_energy"] if r["name"] == "ProfilerStep#5"][0]
    assert s5["duration_ms"] >= 120, s5
    print("annotations: ProfilerStep#5 holds the 120 ms stall")
print("join: alignment by baseTimeNanoseconds, the recording covers the whole trace")
PY

say "2. --no-report: the files, an empty stdout"
d="$work/run2"; mkdir -p "$d"
rec --torch-profile=1,1,3 --no-report --out "$d/trace.csv" -- "$PY" "$HERE/train_plain.py" --steps 8 \
  >"$d/report.txt" 2>"$d/err.txt"
[[ -f "$d/trace.torch.json.gz" && ! -s "$d/report.txt" ]] || die "--no-report: $(ls "$d"); stdout $(wc -c <"$d/report.txt") bytes"
[[ ! -e "$d/trace.torch.perfetto.json.gz" ]] || die "--no-report wrote the Perfetto file"

say "3. an early end inside the active window: atexit exports it"
d="$work/run3"; mkdir -p "$d"
set +e
rec --torch-profile=1,1,20 --no-report --out "$d/trace.csv" -- "$PY" "$HERE/train_plain.py" --steps 30 --exit-at 6 \
  >/dev/null 2>"$d/err.txt"
rc=$?
set -e
[[ $rc -eq 3 ]] || { cat "$d/err.txt"; die "record exited $rc, not the program's 3"; }
"$PY" "$HERE/check_record_profile.py" whole "$d/trace.torch.json.gz" 2
no_tmp "$d"

say "4. SIGINT to record inside the active window: a whole trace, no temporary file"
d="$work/run4"; mkdir -p "$d"
# Job control on: a non-interactive shell's background job would start with SIGINT ignored. The
# binary itself in the background (not the `rec` function, whose subshell would take the signal).
set -m
"$BIN" record --no-rapl --interval-ms 10 --torch-profile=1,1,20 --no-report --out "$d/trace.csv" -- "$PY" -u "$HERE/train_plain.py" --steps 30 --sleep-at 6 \
  >"$d/out.txt" 2>"$d/err.txt" &
pid=$!
set +m
for _ in $(seq 600); do grep -q sleeping "$d/out.txt" 2>/dev/null && break; sleep 0.1; done
grep -q sleeping "$d/out.txt" || { kill -9 $pid; die "the program never reached its sleep"; }
kill -INT $pid
set +e; wait $pid; rc=$?; set -e
[[ $rc -ne 0 ]] || die "record exited 0 after SIGINT"
"$PY" "$HERE/check_record_profile.py" whole "$d/trace.torch.json.gz" 2
no_tmp "$d"
grep -q 'flinch-trace record: .* rows' "$d/err.txt" || die "the recording did not end normally: $(cat "$d/err.txt")"

say "5. torch without an optimizer: one warning, the recording goes on"
d="$work/run5"; mkdir -p "$d"
rec --torch-profile --out "$d/trace.csv" -- "$PY" -W ignore -c 'import torch; torch.ones(3).sum()' \
  >"$d/report.txt" 2>"$d/err.txt"
n=$(grep -c 'warning: --torch-profile' "$d/err.txt" || true)
[[ $n -eq 1 ]] || die "wanted one --torch-profile warning, got $n: $(cat "$d/err.txt")"
grep -q 'no torch.optim optimizer stepped' "$d/err.txt" || die "the warning does not say why: $(cat "$d/err.txt")"
grep -q 'MARK,cmd_end' "$d/trace.csv" || die "the recording has no cmd_end"

say "6. torchrun, 2 ranks on CPU: one trace per rank named by RANK, the lowest rank reported"
d="$work/run7"; mkdir -p "$d"
rec --torch-profile=1,1,3 --out "$d/trace.csv" -- "$TORCH_ENV/bin/torchrun" --standalone --nproc-per-node 2 \
  "$HERE/train_plain.py" --steps 8 >"$d/report.txt" 2>"$d/err.txt" || { cat "$d/err.txt"; die "torchrun under record failed"; }
for r in 0 1; do "$PY" "$HERE/check_record_profile.py" whole "$d/trace.torch.rank$r.json.gz" 3; done
grep -q "the answer: flinch-trace trace $d/trace.torch.rank0.json.gz" "$d/err.txt" || die "rank 0 not reported: $(cat "$d/err.txt")"
grep -q "also written: $d/trace.torch.rank1.json.gz" "$d/err.txt" || die "rank 1 not named"
grep -q 'ProfilerStep#' "$d/report.txt" || die "no report for rank 0"

say "7. flinch_trace.profile() inside the program: the recorder child, the profiler, marks, p.result"
native="${FLINCH_PY_NATIVE:-$(dirname "$BIN")/lib_native.so}"
if [[ -f "$native" ]]; then
  # The package's Python files with the extension module `cargo build -p flinch-py` made (abi3).
  pkg="$work/pkg/flinch_trace"; mkdir -p "$pkg"
  cp python/flinch_trace/*.py "$pkg/"; cp "$native" "$pkg/_native.abi3.so"
  d="$work/run6"
  FLINCH_TRACE_BIN="$BIN" PYTHONPATH="$work/pkg" "$PY" "$HERE/profile_api.py" "$d" 2>"$work/run6.err" \
    || { cat "$work/run6.err"; die "profile_api.py failed"; }
else
  [[ -n "${FLINCH_TORCH_ALLOW_NO_PY:-}" ]] || die "no $native for the Python API test (cargo build -p flinch-py, or FLINCH_PY_NATIVE=PATH; FLINCH_TORCH_ALLOW_NO_PY=1 skips it)"
  say "SKIPPED 7: no $native (FLINCH_TORCH_ALLOW_NO_PY=1)"
fi

say "all passed"
