#!/usr/bin/env bash
# Diff benchmark: `flinch-trace diff A B --json` against the two `trace A --json` and
# `trace B --json` runs it replaces, on generated Kineto-like pairs (A without pauses, B with
# data-loading pauses): CPU seconds (user + sys) and wall of REPS runs of each, in ROUNDS
# interleaved rounds, with the load average and the peak RSS of the largest run. With
# BENCH_STEPS=1 also `diff A B --steps --json` against `trace A --steps --json; trace B --steps
# --json` (the with_stack shape has complete ProfilerStep#N steps; plain's are B/E pairs, which
# are no steps). Prints lines; records nothing by itself (copy the figures into BENCHMARKS.md,
# "diff").
#
# Usage: scripts/bench/diff.sh [MEGABYTES]   (default 100)
# Env:   BENCH_RUNS=3 rounds, BENCH_REPS=10 runs of each command per round,
#        BENCH_SHAPES="plain with_stack", BENCH_EXTS="json json.gz", BENCH_STEPS=0
# Data (native/examples/gen_trace.rs, deterministic; delete a folder to regenerate):
#   bench-data/diff-<SHAPE>-<MB>mb-{a,b}   SHAPE plain and with_stack; b is SHAPE+pauses
set -euo pipefail
cd "$(dirname "$0")/../.."
MB=${1:-100}
RUNS=${BENCH_RUNS:-3}
REPS=${BENCH_REPS:-10}
SHAPES=${BENCH_SHAPES:-plain with_stack}
EXTS=${BENCH_EXTS:-json json.gz}
STEPS=${BENCH_STEPS:-0}

cargo build --release -q -p flinch-trace --bin flinch-trace --example gen_trace
BIN=$PWD/target/release/flinch-trace
for shape in $SHAPES; do
    for side in a b; do
        dir=bench-data/diff-$shape-${MB}mb-$side
        s=$shape
        [[ $side == b ]] && s=$shape+pauses
        [[ -e $dir/trace.json.gz ]] || target/release/examples/gen_trace "$dir" "$MB" "$s"
    done
done

cpu() { # label, command: CPU and wall of REPS runs, the largest run's peak RSS
    /usr/bin/time -f "$1: %e s wall, %U user + %S sys, max RSS %M KB" bash -c "for _ in \$(seq $REPS); do { $2; } >/dev/null; done"
}
for _ in $(seq "$RUNS"); do
    for shape in $SHAPES; do
        for ext in $EXTS; do
            a=bench-data/diff-$shape-${MB}mb-a/trace.$ext
            b=bench-data/diff-$shape-${MB}mb-b/trace.$ext
            cpu "$shape .$ext  2 x trace" "$BIN trace $a --json; $BIN trace $b --json"
            cpu "$shape .$ext  diff     " "$BIN diff $a $b --json"
            if [[ $STEPS == 1 ]]; then
                cpu "$shape .$ext  2 x trace --steps" "$BIN trace $a --steps --json; $BIN trace $b --steps --json"
                cpu "$shape .$ext  diff --steps     " "$BIN diff $a $b --steps --json"
            fi
        done
    done
    echo "load $(cut -d' ' -f1-3 /proc/loadavg)"
done
