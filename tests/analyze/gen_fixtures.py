#!/usr/bin/env python3
"""Writes the trace.csv fixtures of tests/analyze/ deterministically (seeded), in the formats of
reference nvml_trace.py (ten columns) and of `flinch-trace record` (README "trace.csv columns").
Run by scripts/golden/analyze.sh; needs only the Python standard library."""
import os
import random
import sys

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
REF_HDR = ["t_mono_ns", "t_wall_ns", "row_type", "label", "gpu_power_W", "gpu_util_pct",
           "gpu_mem_util_pct", "gpu_sm_clock_MHz", "gpu_temp_C", "rapl_energy_uj"]
FULL_HDR = REF_HDR + ["gpu_index", "gpu_energy_mJ", "gpu_mem_used_MiB", "gpu_throttle_reasons",
                      "host_cpu_pct", "host_mem_used_MiB", "host_mem_available_MiB",
                      "rapl_max_energy_range_uj", "rapl_package-0_dram_uj"]
WALL0 = 1_760_000_000_000_000_000


def ref_row(t, kind, label="", p="", u="", rapl=""):
    return [t, WALL0 + t, kind, label, p, u, "" if p == "" else 3, "" if p == "" else 1410,
            "" if p == "" else 55, rapl]


def write(name, header, rows):
    with open(os.path.join(OUT, name), "w", newline="") as f:
        if header:
            f.write(",".join(header) + "\n")
        for r in rows:
            if isinstance(r, str):
                f.write(r)
            else:
                f.write(",".join(str(x) for x in r) + "\n")


def nvml_like(rng, t0, n, pause=None, interval=10_000_000, marks=(), blank_every=0, rapl=None):
    """One recording as reference nvml_trace.py writes it: samples every ~interval, marks
    interleaved as the mark thread writes them (a MARK can follow a later SAMPLE)."""
    rows = []
    t = t0
    marks = sorted(marks)
    mi = 0
    energy = rapl
    p_last = 70.0
    for k in range(n):
        t += interval + rng.randrange(0, 400_000)
        busy = not (pause and pause[0] <= t <= pause[1])
        if k % 7 == 0:  # the power reading refreshes slower than the sampler: repeats
            p_last = round((rng.uniform(250, 400) if busy else rng.uniform(62, 80)), 3)
        util = rng.randrange(85, 101) if busy else rng.randrange(0, 6)
        if energy is not None:
            energy = (energy + rng.randrange(100_000, 300_000))
        if blank_every and k % blank_every == 3:
            rows.append(ref_row(t, "SAMPLE", rapl="" if energy is None else energy))
        else:
            rows.append(ref_row(t, "SAMPLE", p=p_last, u=util, rapl="" if energy is None else energy))
        # marks whose timestamp has passed are written a little late
        while mi < len(marks) and marks[mi][0] <= t - 2_000_000:
            rows.append(ref_row(marks[mi][0], "MARK", label=marks[mi][1]))
            mi += 1
    while mi < len(marks):
        rows.append(ref_row(marks[mi][0], "MARK", label=marks[mi][1]))
        mi += 1
    return rows, t


def main():
    rng = random.Random(20261129)
    base = 5_000_000_000_000

    # 1. A 700 ms pause while waiting, nvml_trace.py format, begin/end marks.
    rows, _ = nvml_like(rng, base, 400, pause=(base + 1_500_000_000, base + 2_200_000_000),
                        marks=[(base + 5_000_000, "begin"), (base + 1_500_000_000, "pause_start"),
                               (base + 2_200_000_000, "pause_end"), (base + 4_000_000_000, "end")],
                        rapl=10_000_000)
    write("pause.csv", REF_HDR, rows)

    # 2. Blank NVML rows (sampler errors) and a window with a single sample.
    rows, _ = nvml_like(rng, base, 120, blank_every=5,
                        marks=[(base + 100_000_000, "a"), (base + 600_000_000, "b"),
                               (base + 700_000_000, "c"), (base + 705_000_000, "d")])
    write("blanks.csv", REF_HDR, rows)

    # 3. Appended recordings: repeated header, repeated labels, RAPL wrap in the second run.
    r1, t = nvml_like(rng, base, 150, marks=[(base + 200_000_000, "step_start"),
                                             (base + 900_000_000, "step_end")], rapl=5_000)
    r2, _ = nvml_like(rng, t + 3_000_000_000, 150,
                      marks=[(t + 3_200_000_000, "step_start"), (t + 3_900_000_000, "step_end")],
                      rapl=2**32 - 20_000_000)
    write("appended.csv", REF_HDR, r1 + [",".join(REF_HDR) + "\n"] + r2)

    # 4. Marks written before samples with earlier timestamps, ties at the mark times, a mark
    #    before any sample, and equal timestamps (stable order matters for the utilization).
    rows = [ref_row(base, "MARK", label="early")]
    t = base
    for k in range(80):
        t += 10_000_000
        rows.append(ref_row(t, "SAMPLE", p=100 + k, u=k % 100))
        if k == 20:
            rows.append(ref_row(t - 25_000_000, "MARK", label="x_start"))
            rows.append(ref_row(t, "SAMPLE", p=999.5, u=7))  # same t as the sample above
        if k == 60:
            rows.append(ref_row(t, "MARK", label="x_end"))  # same t as a sample
    write("interleaved.csv", REF_HDR, rows)

    # 5. flinch-trace record format, one GPU, counters, RAPL wrap with its max.
    rows = []
    t = base
    e_mj = 123_456_789
    rapl = 262_143_328_850 - 3_000_000 - 60 * 2_500_000  # wraps inside fwd_start..fwd_end
    for k in range(300):
        t += 10_000_000
        p = 80.0 if 100 <= k < 170 else 310.25 + (k % 5)
        e_mj += int(p * 10)
        rapl = (rapl + 2_500_000) % 262_143_328_850
        rows.append([t, WALL0 + t, "SAMPLE", "", p, 0 if 100 <= k < 170 else 97, 40, 1980, 61,
                     rapl, 0, e_mj, 40000, 0, 12.5, 9000, 50000, 262_143_328_850, 1000 + k])
        if k in (50, 100, 170, 250):
            label = {50: "fwd_start", 100: "wait_start", 170: "wait_end", 250: "fwd_end"}[k]
            rows.append([t, WALL0 + t, "MARK", label] + [""] * 15)
    write("record_1gpu.csv", FULL_HDR, rows)

    # 6. Several GPUs (gpu_index), RAPL only on the first row of each tick.
    rows = []
    t = base
    for k in range(200):
        t += 10_000_000
        for g in range(3):
            busy = g != 1 and 60 <= k < 140
            p = round(rng.uniform(300, 350), 2) if busy else round(rng.uniform(60, 70), 2)
            rows.append([t + g * 50_000, WALL0 + t, "SAMPLE", "", p, 95 if busy else 1, 10, 1500, 50,
                         1_000_000 + k * 1000 if g == 0 else "", g, 1_000_000 + k * 3000 * (g + 1),
                         1000, 0, "" if g else 10, "" if g else 5000, "" if g else 60000,
                         "" if g else 262_143_328_850, ""])
        if k in (60, 140):
            rows.append([t + 1, WALL0 + t, "MARK", "run_start" if k == 60 else "run_end"] + [""] * 15)
    write("multi_gpu.csv", FULL_HDR, rows)

    # 7. No GPU at all (one row per tick, GPU fields empty).
    rows = [[base + k * 10_000_000, WALL0, "SAMPLE", ""] + [""] * 5 + [k * 1000] + [""] * 9
            for k in range(50)]
    rows.insert(10, [base + 95_000_000, WALL0, "MARK", "a"] + [""] * 15)
    rows.insert(40, [base + 395_000_000, WALL0, "MARK", "b"] + [""] * 15)
    write("no_gpu.csv", FULL_HDR, rows)

    # 8. Empty file.
    write("empty.csv", None, [])


if __name__ == "__main__":
    main()
