#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes a real PyTorch Kineto trace of a small CPU training loop whose slow steps are known.

A tiny MLP trains on a synthetic dataset through a torch.utils.data.DataLoader (no worker processes, so the
loading runs inside the profiled `enumerate(DataLoader)#...__next__` scope), under torch.profiler with a
schedule (wait, warmup, active), `prof.step()` once per iteration, so the trace holds one
`ProfilerStep#N` annotation per active iteration, N being the iteration number.
- In the `--stall` steps the Dataset's __getitem__ sleeps `--stall-ms` for the batch's first sample: the time
  lands in the data loader (`dataloader`).
- In the `--sleep` steps the loop calls a bare time.sleep of `--sleep-ms` after the optimizer step, outside
  every profiled op (`other`).
Python's garbage collector is off during the loop. Writes TRACE (export_chrome_trace) and TRACE's truth beside it (`--truth`, default TRACE with
`.truth.json` in place of `.json`): torch version, the options, which steps stall and which sleep.

Usage: make_steps_trace.py OUT.json [--stall 8,16] [--sleep 5,12] [--stall-ms 250] [--sleep-ms 250]
       [--seed 0] [--with-stack] [--wait 1] [--warmup 1] [--active 22]
"""
import argparse
import gc
import json
import os
import platform
import sys
import time
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")  # torch without numpy: harmless here
import torch  # noqa: E402
from torch.profiler import ProfilerActivity, profile, schedule  # noqa: E402
from torch.utils.data import DataLoader, Dataset  # noqa: E402


def int_list(text):
    return sorted({int(t) for t in text.split(",") if t.strip()})


class Synthetic(Dataset):
    """n samples of (x, y), made from a seeded generator; sleeps when the first sample of a stall batch is read."""

    def __init__(self, n, features, classes, batch, stall_batches, stall_s, seed):
        g = torch.Generator().manual_seed(seed)
        self.x = torch.randn(n, features, generator=g)
        self.y = torch.randint(0, classes, (n,), generator=g)
        self.batch, self.stall_batches, self.stall_s = batch, set(stall_batches), stall_s

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if i % self.batch == 0 and i // self.batch in self.stall_batches:
            time.sleep(self.stall_s)  # a slow read: inside the DataLoader's profiled __next__
        return self.x[i], self.y[i]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", help="trace path (.json)")
    ap.add_argument("--truth", help="truth JSON path (default: OUT with .truth.json)")
    ap.add_argument("--stall", type=int_list, default=[8, 16], help="steps whose batch loads slowly")
    ap.add_argument("--sleep", type=int_list, default=[5, 12], help="steps with a bare time.sleep")
    ap.add_argument("--stall-ms", type=float, default=250.0)
    ap.add_argument("--sleep-ms", type=float, default=250.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--wait", type=int, default=1)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--active", type=int, default=22)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--features", type=int, default=256)
    ap.add_argument("--hidden", type=int, default=512)
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads: 1 keeps steps steady")
    ap.add_argument("--with-stack", action="store_true", help="record Python stacks (python_function events)")
    args = ap.parse_args(argv)

    first, iters = args.wait + args.warmup, args.wait + args.warmup + args.active
    recorded = list(range(first, iters))
    for s in args.stall + args.sleep:
        if s not in recorded:
            ap.error(f"step {s} is not recorded (active steps are {first}..{iters - 1})")
    if set(args.stall) & set(args.sleep):
        ap.error("a step may stall or sleep, not both")

    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    classes = 10
    data = Synthetic(iters * args.batch, args.features, classes, args.batch, args.stall, args.stall_ms / 1e3,
                     args.seed)
    loader = DataLoader(data, batch_size=args.batch, shuffle=False, num_workers=0)
    model = torch.nn.Sequential(
        torch.nn.Linear(args.features, args.hidden), torch.nn.ReLU(),
        torch.nn.Linear(args.hidden, args.hidden), torch.nn.ReLU(),
        torch.nn.Linear(args.hidden, classes))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()

    out = args.out  # as given: Kineto writes it into the trace as traceName
    truth_path = args.truth or (out[:-5] if out.endswith(".json") else out) + ".truth.json"
    exported = []

    def on_ready(prof):
        prof.export_chrome_trace(out)
        exported.append(out)

    sched = schedule(wait=args.wait, warmup=args.warmup, active=args.active, repeat=1)
    # No garbage collection inside the loop: its pauses made fast steps slow (false outliers) on a busy machine.
    gc.collect()
    gc.disable()
    t0 = time.monotonic()
    with profile(activities=[ProfilerActivity.CPU], schedule=sched, on_trace_ready=on_ready,
                 with_stack=args.with_stack) as prof:
        for i, (x, y) in enumerate(loader):  # iteration i runs inside ProfilerStep#i
            opt.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()
            opt.step()
            if i in args.sleep:
                time.sleep(args.sleep_ms / 1e3)  # nothing profiled runs here
            prof.step()
    wall_s = time.monotonic() - t0
    gc.enable()
    if not exported:
        sys.exit("make_steps_trace: the profiler wrote no trace")

    truth = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "machine": f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPUs",
        "command": "make_steps_trace.py " + " ".join(sys.argv[1:] if argv is None else argv),
        "schedule": {"wait": args.wait, "warmup": args.warmup, "active": args.active},
        "steps": recorded,
        "stall_steps": args.stall,
        "stall_ms": args.stall_ms,
        "sleep_steps": args.sleep,
        "sleep_ms": args.sleep_ms,
        "seed": args.seed,
        "with_stack": args.with_stack,
        "threads": args.threads,
        "wall_s": round(wall_s, 3),
    }
    with open(truth_path, "w") as f:
        json.dump(truth, f, indent=1)
        f.write("\n")
    print(f"wrote {out} ({os.path.getsize(out)} bytes) and {truth_path} in {wall_s:.1f} s")


if __name__ == "__main__":
    main()
