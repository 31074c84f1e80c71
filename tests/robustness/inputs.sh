#!/usr/bin/env bash
# Inputs that are not regular files (docs/robustness.md, "Inputs that are not regular files"):
# FIFOs, pipes on /dev/stdin and process substitution, for analyze (--json, --spans) and trace
# (--json, --mergeable, --pauses, --telemetry, --perfetto). Each result must equal the same job
# on the regular file, with exit 0; a FIFO's writer must see every byte taken (no EPIPE); every
# wait is bounded, so a hang is a failure. Then the spool's errors: a TMPDIR where no file can be
# made, and a file size limit under the spool.
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN="${FLINCH_BIN:-target/debug/flinch-trace}"
BIN="$(cd "$(dirname "$BIN")" && pwd)/$(basename "$BIN")"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*" >&2; }
# A bound for every run (a debug build on two busy cores); a hang is forever.
LIMIT=30

python3 scripts/bench/gen-many-marks.py "$T/m.csv" 6000 >/dev/null
python3 - "$T" <<'EOF'
import sys
d = sys.argv[1]
base = 1_764_000_000_000_000_000
evs, ts = [], 1_000_000
for k in range(3000):
    evs.append('{"ph":"X","cat":"kernel","name":"k%d","pid":0,"tid":7,"ts":%d.5,"dur":1000}' % (k % 17, ts))
    ts += 2000
    if k % 50 == 49:
        evs.append('{"ph":"X","cat":"cpu_op","name":"aten::item","pid":9,"tid":9,"ts":%d.5,"dur":100000}' % (ts + 5000))
        ts += 120_000
with open(f"{d}/t.json", "w") as f:
    f.write('{"traceEvents":[\n' + ",\n".join(evs) + '\n],"traceName":"t","baseTimeNanoseconds":%d}\n' % base)
with open(f"{d}/rec.csv", "w") as f:
    f.write("t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,"
            "gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index\n")
    for k in range(1400):
        t = 900_000_000 + k * 10_000_000
        p, u = (300, 90) if k % 23 < 12 else (100, 0)
        f.write(f"{1_000_000_000 + t},{base + t},SAMPLE,,{p},{u},,,,,0\n")
EOF
gzip -c "$T/t.json" >"$T/t.json.gz"

# The output with the path given ("source", also inside the compact mergeable section) blanked,
# so results of one input given as a file and as a FIFO compare.
norm() { sed -E 's/"source": ?"[^"]*"/"source":""/g' "$1"; }

# want NAME CMD... : the job on regular files, kept as $T/NAME.want (stdout).
want() {
  local name=$1; shift
  if ! timeout "$LIMIT" "$@" >"$T/$name.want" 2>"$T/$name.want.err"; then
    bad "$name: the regular-file run failed: $(head -3 "$T/$name.want.err")"
    return 1
  fi
}

# same NAME RC : compares $T/NAME.out with $T/NAME.want given the job's exit status RC.
same() {
  local name=$1 rc=$2
  if [[ $rc -ne 0 ]]; then
    bad "$name: exit $rc: $(head -3 "$T/$name.err")"
  elif ! diff -q <(norm "$T/$name.want") <(norm "$T/$name.out") >/dev/null; then
    bad "$name: differs from the regular file's result"
  else
    ok
  fi
}

# fifo NAME FILE CMD... : CMD with @ replaced by a FIFO that FILE is written into; checks the
# result and that the writer saw no error.
fifo() {
  local name=$1 src=$2; shift 2
  local f="$T/$name.fifo" args=() a
  mkfifo "$f"
  for a in "$@"; do [[ $a == @ ]] && args+=("$f") || args+=("$a"); done
  timeout "$LIMIT" sh -c 'cat "$1" >"$2"' _ "$src" "$f" &
  local writer=$! rc=0 wrc=0
  timeout "$LIMIT" "${args[@]}" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
  # A writer still blocked in open(2) is freed by a reader that opens and closes at once.
  if kill -0 "$writer" 2>/dev/null; then timeout 2 cat "$f" >/dev/null 2>&1 || true; fi
  wait "$writer" || wrc=$?
  rm -f "$f"
  if [[ $wrc -ne 0 ]]; then
    bad "$name: the FIFO's writer failed (exit $wrc): bytes were not read"
  else
    same "$name" "$rc"
  fi
}

# pipe NAME FILE CMD... : CMD with @ replaced by /dev/stdin, FILE piped in.
pipe() {
  local name=$1 src=$2; shift 2
  local args=() a rc=0
  for a in "$@"; do [[ $a == @ ]] && args+=(/dev/stdin) || args+=("$a"); done
  cat "$src" | timeout "$LIMIT" "${args[@]}" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
  same "$name" "$rc"
}

# subst NAME FILE CMD... : CMD with @ replaced by <(cat FILE).
subst() {
  local name=$1 src=$2; shift 2
  local rc=0
  timeout "$LIMIT" bash -c '
    src=$1; shift; args=()
    for a in "$@"; do [[ $a == @ ]] && args+=(/dev/fd/3) || args+=("$a"); done
    exec 3< <(cat "$src"); "${args[@]}"' _ "$src" "$@" >"$T/$name.out" 2>"$T/$name.err" || rc=$?
  same "$name" "$rc"
}

# every NAME FILE CMD... : the regular file, then a FIFO, a pipe and process substitution.
every() {
  local name=$1 src=$2; shift 2
  local args=() a
  for a in "$@"; do [[ $a == @ ]] && args+=("$src") || args+=("$a"); done
  want "$name" "${args[@]}" || return 0
  for how in fifo pipe subst; do
    cp "$T/$name.want" "$T/$name-$how.want"
    "$how" "$name-$how" "$src" "$@"
  done
}

every an-json "$T/m.csv" "$BIN" analyze --json --csv @
every an-spans "$T/m.csv" "$BIN" analyze --spans --csv @
every tr-json "$T/t.json" "$BIN" trace --json @
every tr-gz "$T/t.json.gz" "$BIN" trace --json @
every tr-mergeable "$T/t.json" "$BIN" trace --json --mergeable @
every tr-pauses "$T/t.json" "$BIN" trace --json --pauses @
every tr-pauses-gz "$T/t.json.gz" "$BIN" trace --json --pauses @
every tr-telemetry "$T/t.json" "$BIN" trace --json --telemetry "$T/rec.csv" @
every tr-rec "$T/rec.csv" "$BIN" trace --json --telemetry @ "$T/t.json"

# The recording given as --telemetry is read twice with --perfetto: the merged file must be the
# regular file's, byte for byte.
for how in file fifo pipe subst; do
  out="$T/merged-$how.json"
  rc=0
  case $how in
    file) timeout "$LIMIT" "$BIN" trace --json --telemetry "$T/rec.csv" --perfetto "$out" "$T/t.json" \
            >/dev/null 2>"$T/p.err" || rc=$? ;;
    fifo) mkfifo "$T/rec.fifo"
          timeout "$LIMIT" sh -c 'cat "$1" >"$2"' _ "$T/rec.csv" "$T/rec.fifo" & w=$!
          timeout "$LIMIT" "$BIN" trace --json --telemetry "$T/rec.fifo" --perfetto "$out" "$T/t.json" \
            >/dev/null 2>"$T/p.err" || rc=$?
          kill -0 "$w" 2>/dev/null && { timeout 2 cat "$T/rec.fifo" >/dev/null 2>&1 || true; }
          wait "$w" || rc=$? ;;
    pipe) cat "$T/rec.csv" | timeout "$LIMIT" "$BIN" trace --json --telemetry /dev/stdin --perfetto "$out" \
            "$T/t.json" >/dev/null 2>"$T/p.err" || rc=$? ;;
    subst) timeout "$LIMIT" bash -c 'exec "$0" trace --json --telemetry <(cat "$1") --perfetto "$2" "$3"' \
             "$BIN" "$T/rec.csv" "$out" "$T/t.json" >/dev/null 2>"$T/p.err" || rc=$? ;;
  esac
  if [[ $rc -ne 0 ]]; then
    bad "perfetto-$how: exit $rc: $(head -3 "$T/p.err")"
  elif [[ $how != file ]] && ! cmp -s "$T/merged-file.json" "$out"; then
    bad "perfetto-$how: the merged file differs from the regular file's ($(wc -c <"$out") bytes)"
  else
    ok
  fi
done

# The trace itself on a pipe with --perfetto: the merged file is copied from the trace's spool.
rc=0
cat "$T/t.json" | timeout "$LIMIT" "$BIN" trace --json --telemetry "$T/rec.csv" --perfetto "$T/merged-trace-pipe.json" \
  /dev/stdin >/dev/null 2>"$T/p.err" || rc=$?
if [[ $rc -ne 0 ]]; then
  bad "perfetto-trace-pipe: exit $rc: $(head -3 "$T/p.err")"
elif ! cmp -s "$T/merged-file.json" "$T/merged-trace-pipe.json"; then
  bad "perfetto-trace-pipe: the merged file differs from the regular file's"
else
  ok
fi

# The spool says so on stderr, once; a one-pass job does not spool.
cat "$T/m.csv" | timeout "$LIMIT" "$BIN" analyze --spans --csv /dev/stdin >/dev/null 2>"$T/n.err" || true
if [[ $(grep -c '^note: /dev/stdin is not a regular file; spooling it to a temporary file' "$T/n.err") == 1 ]]; then
  ok
else
  bad "spool note: $(head -3 "$T/n.err")"
fi
cat "$T/t.json" | timeout "$LIMIT" "$BIN" trace --bounded --json /dev/stdin >/dev/null 2>"$T/n.err" || true
if grep -q spooling "$T/n.err"; then bad "trace --bounded spooled a pipe"; else ok; fi

# A TMPDIR where no file can be made: one line naming the input, exit 1, before reading.
rc=0
cat "$T/m.csv" | TMPDIR="$T/missing" timeout "$LIMIT" "$BIN" analyze --spans --csv /dev/stdin \
  >"$T/e.out" 2>"$T/e.err" || rc=$?
if [[ $rc -eq 1 ]] && grep -q 'cannot open /dev/stdin: spooling to a temporary file in .*missing' "$T/e.err" \
  && [[ ! -s "$T/e.out" ]]; then
  ok
else
  bad "TMPDIR missing: exit $rc: $(head -3 "$T/e.err")"
fi

# A file size limit under the spool (EFBIG; a full disk gives ENOSPC the same way): one line
# naming the input, exit 1, no partial result.
rc=0
cat "$T/t.json" | timeout "$LIMIT" bash -c 'ulimit -f 64; exec "$0" trace --json --pauses /dev/stdin' \
  "$BIN" >"$T/e.out" 2>"$T/e.err" || rc=$?
if [[ $rc -eq 1 ]] && grep -q '/dev/stdin: spooling to a temporary file in .* failed at byte [0-9]*: File too large' "$T/e.err" \
  && [[ ! -s "$T/e.out" ]]; then
  ok
else
  bad "spool over a file size limit: exit $rc: $(head -3 "$T/e.err")"
fi

echo "robustness inputs: $pass passed, $fail failed"
[[ $fail -eq 0 ]]
