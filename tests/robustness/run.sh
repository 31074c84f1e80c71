#!/usr/bin/env bash
# Runs every adversarial script in this folder against one binary (FLINCH_BIN, default target/debug/flinch-trace).
# Each script prints one line "robustness NAME: N passed, M failed" and exits non-zero when M > 0.
set -uo pipefail
cd "$(dirname "$0")/../.."
export FLINCH_BIN="${FLINCH_BIN:-target/debug/flinch-trace}"
[[ -x $FLINCH_BIN ]] || { echo "robustness: $FLINCH_BIN is not built" >&2; exit 1; }
failed=()
for script in tests/robustness/*.sh; do
  [[ $(basename "$script") == run.sh ]] && continue
  echo "-- $script"
  # Each script bounds its own waits; this outer bound turns a hang into a failure, never a stuck run.
  if ! timeout --kill-after=10 300 bash "$script"; then
    failed+=("$script")
  fi
done
if ((${#failed[@]})); then
  echo "robustness: failed: ${failed[*]}" >&2
  exit 1
fi
echo "robustness: every script passed"
