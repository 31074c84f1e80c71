#!/usr/bin/env python3
"""A one-hour recording at 10 ms (360,000 rows) on the clock of gen_trace's traces.

gen_trace's ts are Unix us and its baseTimeNanoseconds is 1712195400000000000, so the trace's first
event is at Unix ns BASE + 1712195495406752800. The recording starts 60 s earlier; power and
utilization follow a slow square wave. Usage: gen-recording.py OUT.csv
"""
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
