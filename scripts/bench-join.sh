#!/usr/bin/env bash
# Join benchmark: `flinch-trace trace` on the ~1 GB Kineto-like trace, plain and joined with a
# one-hour recording at 10 ms (360,000 rows), and with listed pauses (a second read), side by
# side, interleaved; wall, CPU and peak RSS.
# Prints a table; records nothing by itself (copy the figures into BENCHMARKS.md, "Trace join").
#
# Usage: scripts/bench-join.sh [MEGABYTES]   (default 1000)
# Env:   BENCH_RUNS=3   rounds (each round runs every command once, in turn)
# Data:  bench-data/kineto-<MEGABYTES>mb/trace.json (native/examples/gen_trace.rs, as
#        scripts/bench-trace.sh) and bench-data/join-360k.csv (written here, deterministic).
set -euo pipefail
cd "$(dirname "$0")/.."
MB=${1:-1000}
RUNS=${BENCH_RUNS:-3}
DATA=bench-data/kineto-${MB}mb
JSON=$DATA/trace.json
CSV=bench-data/join-360k.csv

cargo build --release -q -p flinch-trace --bin flinch-trace --example gen_trace
BIN=target/release/flinch-trace
if [[ ! -s $JSON ]]; then
    target/release/examples/gen_trace "$DATA" "$MB"
fi
if [[ ! -s $CSV ]]; then
    # The generator's ts are Unix µs and its baseTimeNanoseconds is 1712195400000000000, so the
    # trace's first event is at Unix ns BASE + 1712195495406752800. The recording starts 60 s
    # earlier and lasts one hour at 10 ms; power and utilization follow a slow square wave.
    python3 - "$CSV" <<'PY'
import sys
base = 1712195400000000000 + 1712195495406752800 - 60_000_000_000
with open(sys.argv[1], "w") as f:
    f.write("t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,"
            "gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index,gpu_energy_mJ\n")
    e = 0.0
    for k in range(360_000):
        busy = (k // 50) % 3 != 0
        p = 410.5 if busy else 95.25
        e += p * 10
        t = base + k * 10_000_000
        f.write(f"{t - base + 1_000_000_000},{t},SAMPLE,,{p},{99 if busy else 0},40,1980,60,,0,{e:.0f}\n")
PY
fi
echo "trace: $(stat -c %s "$JSON") bytes; recording: $(wc -l < "$CSV") lines"
printf '%-48s %8s %8s %8s %8s\n' command wall_s user_s sys_s rss_MiB
for round in $(seq "$RUNS"); do
    # The generated GPU is never idle for 10 us: --min-gap-ms 0.001 lists pauses (64,694 gaps
    # of >= 1 us), the case in which the join reads the trace a second time.
    for args in "--json" "--pauses --json" "--telemetry $CSV --json" "--pauses --min-gap-ms 0.001 --json"; do
        # shellcheck disable=SC2086
        /usr/bin/time -f "%e %U %S %M" -o /tmp/bench-join.time "$BIN" trace "$JSON" $args > /dev/null
        read -r wall user sys rss < /tmp/bench-join.time
        printf '%-48s %8s %8s %8s %8.1f\n' "trace $args" "$wall" "$user" "$sys" "$(echo "$rss / 1024" | bc -l)"
    done
done
