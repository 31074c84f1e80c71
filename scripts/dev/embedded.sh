#!/usr/bin/env bash
# Builds the firmware image flinch-mcu (embedded/, release, thumbv7em-none-eabihf) and runs
#   flinch-mcu CSV START END [--stats]
# on QEMU's Cortex-M4 board (mps2-an386) with semihosting: the image reads CSV from the host in
# 1 KiB chunks and prints what `flinch-trace analyze --csv CSV --start START --end END` prints,
# then `verdict=...`. Its stdout and stderr are this script's; so is its exit status.
# Paths are relative to the current directory. Arguments cannot hold spaces (the semihosting
# command line is split at spaces). FLINCH_QEMU_ARGS adds QEMU options (e.g. "-icount shift=0").
# Needs the thumbv7em-none-eabihf target and qemu-system-arm (scripts/setup.sh installs both).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)

if (($# < 3 || $# > 4)) || { (($# == 4)) && [[ $4 != --stats ]]; }; then
    echo "usage: scripts/dev/embedded.sh CSV START END [--stats]" >&2
    exit 2
fi
for a in "$@"; do
    if [[ -z $a || $a =~ [[:space:]] ]]; then
        echo "embedded.sh: arguments cannot be empty or hold spaces (the semihosting command line is split at spaces): '$a'" >&2
        exit 2
    fi
done
command -v qemu-system-arm >/dev/null || {
    echo "embedded.sh: qemu-system-arm not found (scripts/setup.sh installs it)" >&2
    exit 2
}

(cd "$root/embedded" && cargo build --release --quiet --locked --target thumbv7em-none-eabihf) >&2
image=$root/embedded/target/thumbv7em-none-eabihf/release/flinch-mcu

# shellcheck disable=SC2086 # FLINCH_QEMU_ARGS is a list of options
exec timeout "${FLINCH_QEMU_TIMEOUT:-300}" qemu-system-arm -machine mps2-an386 -cpu cortex-m4 \
    -nographic -monitor none -serial none ${FLINCH_QEMU_ARGS:-} \
    -semihosting-config enable=on,target=native -kernel "$image" -append "$*"
