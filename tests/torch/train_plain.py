#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A plain CPU training loop that imports neither flinch_trace nor torch.profiler: the program
`record --torch-profile` profiles without a change (tests/torch/record_profile.sh).

Usage: train_plain.py [--steps 30] [--stall 12,14] [--stall-ms 150] [--stamps FILE] [--exit-at N]
  --stall: iterations that sleep --stall-ms before their optimizer step (a host stall in that step).
  --stamps: writes, per iteration, "i t_before_ns t_after_ns" of CLOCK_REALTIME around
            optimizer.step(), which the clock check compares with the trace's ProfilerStep starts.
  --exit-at: os._exit-free early end: raises SystemExit at iteration N (atexit still runs).
  --sleep-at N: blocks in a long sleep at iteration N (for the SIGINT test), printing "sleeping".
"""
import argparse
import sys
import time
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import torch  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--stall", default="")
    ap.add_argument("--stall-ms", type=float, default=150.0)
    ap.add_argument("--stamps")
    ap.add_argument("--exit-at", type=int, default=-1)
    ap.add_argument("--sleep-at", type=int, default=-1)
    ap.add_argument("--width", type=int, default=256)
    a = ap.parse_args()
    stall = {int(s) for s in a.stall.split(",") if s.strip()}
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Linear(a.width, a.width), torch.nn.ReLU(), torch.nn.Linear(a.width, 10)
    )
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    x, y = torch.randn(64, a.width), torch.randint(0, 10, (64,))
    stamps = open(a.stamps, "w") if a.stamps else None
    for i in range(a.steps):
        if i == a.exit_at:
            sys.exit(3)
        if i == a.sleep_at:
            print("sleeping", flush=True)
            time.sleep(600)
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        if i in stall:
            time.sleep(a.stall_ms / 1000)
        t0 = time.time_ns()
        opt.step()
        t1 = time.time_ns()
        if stamps:
            stamps.write("%d %d %d\n" % (i, t0, t1))
    if stamps:
        stamps.close()


if __name__ == "__main__":
    main()
