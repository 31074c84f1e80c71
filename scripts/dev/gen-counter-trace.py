#!/usr/bin/env python3
"""A random trace.csv that exercises analyze's energy counters: 3 GPUs, NVML counters with resets
and fractional readings, RAPL wrapping at a recorded maximum (odd seeds) or with none (even seeds),
long gaps, missing fields and pair/stretch marks. For scripts/dev/compare-analyze.sh.
Usage: scripts/dev/gen-counter-trace.py SEED OUT.csv"""
import random, sys
seed = int(sys.argv[1]); out = sys.argv[2]
r = random.Random(seed)
cols = "t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index,gpu_energy_mJ,rapl_max_energy_range_uj".split(",")
rows = [",".join(cols)]
t = 10**12
e = [r.uniform(0, 1e6) for _ in range(3)]
rapl = r.randrange(0, 1 << 20); maxr = (1 << 20) if seed % 2 else None
labels = ["begin", "end", "a_start", "a_end", "x", "y_begin", "y_end"]
for i in range(20000):
    t += r.choice([1, 1000, 10**6, 10**7, 10**7, 5 * 10**7, 6 * 10**9 if r.random() < 0.002 else 10**7])
    if r.random() < 0.01:
        rows.append(f"{t},{t},MARK,{r.choice(labels)}" + "," * (len(cols) - 4)); continue
    g = r.randrange(3)
    p = "" if r.random() < 0.05 else f"{r.uniform(0, 700):.{r.choice([0,1,3,6])}f}"
    u = "" if r.random() < 0.1 else str(r.randrange(0, 101))
    e[g] += r.uniform(0, 7000) if r.random() > 0.01 else -r.uniform(0, 1e5)
    en = "" if r.random() < 0.1 else (f"{e[g]:.3f}" if r.random() < 0.3 else str(int(max(e[g], 0))))
    rapl = (rapl + r.randrange(0, 300000)) % (1 << 20)
    rp = "" if r.random() < 0.2 else str(rapl)
    mx = str(maxr) if (maxr and r.random() < 0.9) else ""
    rows.append(f"{t},{t},SAMPLE,,{p},{u},1,1400,50,{rp},{g},{en},{mx}")
open(out, "w").write("\n".join(rows) + "\n")
