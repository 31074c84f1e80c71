#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A fixed CPU training loop that times its own iterations (scripts/bench/torch-profile.sh).

Usage: torch-loop.py [--steps 300] [--skip 30] [--width 512] [--threads 1]
       torch-loop.py --ab-recorder "CMD" [--ab-pairs 300] [--ab-block 50] [--width 512] [--threads 1]
Prints one JSON line: the median, mean and p90 iteration time in ms over the iterations after --skip, and the
median CPU time of the loop's own thread per iteration (`median_cpu_ms`): wall time moves with whatever else the
machine runs, the thread's CPU time only with what happens inside the process and its caches.

With --ab-recorder, one process measures what a recorder running beside it costs: `CMD record --no-rapl
--interval-ms 10 --out F -- sleep 86400` runs throughout, and pairs of blocks of --ab-block iterations alternate
(in alternating order) between the recorder sampling and the recorder frozen by SIGSTOP. Each pair gives the ratio
of the blocks' median iteration times (on / off); the line holds the median ratio and its distribution-free 95 %
interval (order statistics of the pair ratios, binomial), and the rows the recorder wrote (proof that it sampled).
Between-process noise (memory layout, allocator, the machine's drift) cancels in a pair, which is what lets a
0.5 % effect be seen at all. The recorder is resumed and stopped however the measurement ends.
"""
import argparse
import json
import math
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import torch  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--skip", type=int, default=30)
    ap.add_argument("--width", type=int, default=512)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--ab-recorder", default="")
    ap.add_argument("--ab-pairs", type=int, default=300)
    ap.add_argument("--ab-block", type=int, default=50)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(a.width, a.width), torch.nn.ReLU(), torch.nn.Linear(a.width, a.width)
    )
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(128, a.width), torch.randn(128, a.width)
    def step():
        t = time.perf_counter_ns()
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return time.perf_counter_ns() - t

    if a.ab_recorder:
        return ab(step, a)
    times, cpu = [], []
    for _ in range(a.steps):
        c = time.thread_time_ns()
        times.append(step())
        cpu.append(time.thread_time_ns() - c)
    ms = sorted(v / 1e6 for v in times[a.skip:])
    print(json.dumps({
        "n": len(ms),
        "median_ms": statistics.median(ms),
        "mean_ms": statistics.fmean(ms),
        "p90_ms": ms[int(0.9 * (len(ms) - 1))],
        "median_cpu_ms": statistics.median(v / 1e6 for v in cpu[a.skip:]),
    }))


def median_ci95(values):
    """The sample median and a distribution-free 95 % interval for the population median: order statistics
    k and n-1-k, with k the largest count whose two binomial(n, 1/2) tails hold at most 2.5 % each."""
    v = sorted(values)
    n = len(v)
    k, tail = 0, 0.0
    for j in range(n):
        tail += math.comb(n, j) / 2**n
        if tail > 0.025:
            break
        k = j + 1
    return statistics.median(v), (v[k - 1], v[n - k]) if k > 0 else (v[0], v[-1])


def ab(step, a):
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "ab.csv")
        rec = subprocess.Popen(shlex.split(a.ab_recorder) + ["record", "--no-rapl", "--interval-ms", "10", "--out", out,
                                                             "--", "sleep", "86400"],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            ratios, on_ns = ab_pairs(step, a, rec)
        finally:
            # Never leave a frozen recorder (and its day-long sleep) behind, whatever ended the loop.
            rec.send_signal(signal.SIGCONT)
            rec.send_signal(signal.SIGINT)
            # SIGINT ends the wrapped sleep too: record exits 130 with the file complete.
            code = rec.wait(timeout=30)
        if code not in (0, 130):
            sys.exit(f"the recorder exited {code}")
        with open(out) as f:
            rows = sum(1 for line in f if ",SAMPLE," in line)
    mid, (lo, hi) = median_ci95(ratios)
    print(json.dumps({
        "pairs": len(ratios), "block": a.ab_block,
        "ratio_on_off_median": mid, "ci95": [lo, hi],
        # Proof that it sampled while "on": about one row per 10 ms of those blocks (plus the warm-up's).
        "recorder_rows": rows, "on_seconds": on_ns / 1e9,
    }))


def ab_pairs(step, a, rec):
    """The on / off ratio of each pair of blocks, and the time spent "on"."""
    for _ in range(200):  # warm up, the recorder started and sampling
        step()
    ratios, on_ns = [], 0
    for i in range(a.ab_pairs):
        med = {}
        for state in (("off", "on") if i % 2 == 0 else ("on", "off")):
            # SIGSTOP freezes every thread of the recorder (its sampler, marks and writer): "off" is a recorder
            # that exists but does nothing, so only its sampling separates the two blocks.
            rec.send_signal(signal.SIGCONT if state == "on" else signal.SIGSTOP)
            t0 = time.perf_counter_ns()
            times = sorted(step() for _ in range(a.ab_block))
            if state == "on":
                on_ns += time.perf_counter_ns() - t0
            med[state] = statistics.median(times)
        ratios.append(med["on"] / med["off"])
    return ratios, on_ns


if __name__ == "__main__":
    main()
