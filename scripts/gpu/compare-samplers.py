#!/usr/bin/env python3
"""Compares a flinch-trace recording with one made by the reference nvml_trace.py at the same time on the
same GPU (scripts/gpu/device-run.sh): per mark window of the flinch-trace file, the samples each sampler
took, their interval (median, p99, largest gap), the samples-only trapezoid energy of each, and the NVML
energy counter's delta from the flinch-trace file as the yardstick. Both files use CLOCK_MONOTONIC in
t_mono_ns, so one window selects the same time in both. Standard library only.
Usage: scripts/gpu/compare-samplers.py FLINCH_TRACE_CSV REFERENCE_CSV [GPU_INDEX]
"""
import csv
import sys


def load(path, gpu):
    samples, marks = [], []
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            t = int(row["t_mono_ns"])
            if row["row_type"] == "MARK":
                marks.append((t, row["label"]))
                continue
            if row.get("gpu_index", "") not in ("", str(gpu)):
                continue
            p = row.get("gpu_power_W", "")
            if p == "":
                continue
            e = row.get("gpu_energy_mJ", "")
            samples.append((t, float(p), int(e) if e not in ("", None) else None))
    samples.sort()
    return samples, marks


def window(samples, t0, t1):
    return [s for s in samples if t0 <= s[0] <= t1]


def describe(ws):
    if len(ws) < 2:
        return f"{len(ws)} samples", None
    gaps = sorted((b[0] - a[0]) / 1e6 for a, b in zip(ws, ws[1:]))
    med = gaps[len(gaps) // 2]
    p99 = gaps[min(len(gaps) - 1, int(0.99 * len(gaps)))]
    energy_j = sum((b[0] - a[0]) / 1e9 * (a[1] + b[1]) / 2 for a, b in zip(ws, ws[1:]))
    return (f"{len(ws):5d} samples, interval median {med:6.2f} ms p99 {p99:6.2f} ms max {gaps[-1]:7.2f} ms, "
            f"trapezoid {energy_j:9.2f} J", energy_j)


def main():
    ours_path, ref_path = sys.argv[1], sys.argv[2]
    gpu = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    ours, marks = load(ours_path, gpu)
    ref, _ = load(ref_path, gpu)
    if not ref:
        print("reference sampler: no GPU samples")
        return 1
    at = {}
    for t, label in marks:
        at.setdefault(label, t)
    pairs = [(a, a.replace("_start", "_end")) for a in at if a.endswith("_start") and a.replace("_start", "_end") in at]
    print(f"overlap: flinch-trace {len(ours)} samples, reference {len(ref)} samples")
    for start, end in pairs:
        t0, t1 = at[start], at[end]
        print(f"{start}..{end}: {(t1 - t0) / 1e9:.3f} s")
        for name, s in (("flinch-trace", ours), ("reference", ref)):
            text, _ = describe(window(s, t0, t1))
            print(f"  {name:13s} {text}")
        wo = [x for x in window(ours, t0, t1) if x[2] is not None]
        if len(wo) >= 2:
            print(f"  NVML counter  {(wo[-1][2] - wo[0][2]) / 1e3:9.2f} J between the first and last flinch-trace sample")
    return 0


if __name__ == "__main__":
    sys.exit(main())
