#!/usr/bin/env python3
"""Writes a deterministic trace.csv with many marks, for the memory check of `analyze --json` /
`--spans` (BENCHMARKS.md, "`analyze --json` / `--spans` with many marks").

Usage: scripts/bench/gen-many-marks.py OUT.csv N_MARKS [SEED]

Two GPUs sampled every 10 ms; after each tick one MARK: `step_K_start` / `step_K_end` pairs (each
label seen once), `begin` / `end` now and then, an `outer_start` ... `outer_end` pair around the
whole file and a `never_start` that never closes. 750,000 marks make a ~156 MB file.
"""
import random
import sys

out, n = sys.argv[1], int(sys.argv[2])
rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
hdr = ("t_mono_ns,t_wall_ns,row_type,label,gpu_index,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,"
       "gpu_sm_clock_MHz,gpu_temp_C,gpu_energy_mJ,rapl_energy_uj\n")
with open(out, "w") as f:
    f.write(hdr)
    t = 1_000_000_000
    e = 0.0
    f.write(f"{t},0,MARK,outer_start,,,,,,,,\n")
    f.write(f"{t},0,MARK,never_start,,,,,,,,\n")
    for k in range(n):
        for g in range(2):
            p = 60 + (k % 13) * 20 + rng.random()
            e += p * 5
            f.write(f"{t},{t},SAMPLE,,{g},{p:.3f},{(k * 7) % 101},3,1400,60,{e:.1f},"
                    f"{(k * 1234567) % (1 << 32)}\n")
        t += 5_000_000
        lab = f"step_{k}_start" if k % 2 == 0 else f"step_{k - 1}_end"
        if k % 97 == 5:
            lab = "begin"
        if k % 97 == 50:
            lab = "end"
        f.write(f"{t},0,MARK,{lab},,,,,,,,\n")
        t += 5_000_000
    f.write(f"{t},0,MARK,outer_end,,,,,,,,\n")
    f.write(f"{t + 10},{t},SAMPLE,,0,100,50,3,1400,60,{e:.1f},5\n")
