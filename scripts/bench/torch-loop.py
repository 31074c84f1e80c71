#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A fixed CPU training loop that times its own iterations (scripts/bench/torch-profile.sh).

Usage: torch-loop.py [--steps 300] [--skip 30] [--width 512] [--threads 1]
Prints one JSON line: the median, mean and p90 iteration time in ms over the iterations after --skip, and the
median CPU time of the loop's own thread per iteration (`median_cpu_ms`): wall time moves with whatever else the
machine runs, the thread's CPU time only with what happens inside the process and its caches.
"""
import argparse
import json
import statistics
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
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(a.width, a.width), torch.nn.ReLU(), torch.nn.Linear(a.width, a.width)
    )
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    x, y = torch.randn(128, a.width), torch.randn(128, a.width)
    times, cpu = [], []
    for _ in range(a.steps):
        t, c = time.perf_counter_ns(), time.thread_time_ns()
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        cpu.append(time.thread_time_ns() - c)
        times.append(time.perf_counter_ns() - t)
    ms = sorted(v / 1e6 for v in times[a.skip:])
    print(json.dumps({
        "n": len(ms),
        "median_ms": statistics.median(ms),
        "mean_ms": statistics.fmean(ms),
        "p90_ms": ms[int(0.9 * (len(ms) - 1))],
        "median_cpu_ms": statistics.median(v / 1e6 for v in cpu[a.skip:]),
    }))


if __name__ == "__main__":
    main()
