#!/usr/bin/env python3
"""A profiled PyTorch training-like loop with one deliberate host pause, for scripts/gpu/join-check.sh.

Eight steps under torch.profiler (CPU + CUDA activities), each a `record_function("train_step")` of
matrix products; step 4 also sleeps PAUSE seconds on the host inside `record_function("host_wait")`,
so the GPU idles for that long. Marks `pause_start` / `pause_end` bracket the sleep through the
recorder's FIFO ($FLINCH_MARKS, `@<t_mono_ns> <label>` lines), so `analyze` can measure the same
window from the recording alone. Writes the Kineto trace to OUT (Chrome JSON, baseTimeNanoseconds
included by the profiler).

`--dry-run` (no GPU, no PyTorch): writes a Kineto-shaped trace of the same timeline by hand, with
fake kernels on device 0 and the host sleep really taken, so the join's plumbing can be checked on
any machine. Its energy figures mean nothing.
"""
import argparse
import json
import time

from load import mark


def real(out, steps, pause_s):
    import torch
    from torch.profiler import ProfilerActivity, profile, record_function

    a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
    b = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
    for _ in range(10):  # warm-up outside the profile: kernels loaded, clocks up
        a @ b
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for step in range(steps):
            with record_function("train_step"):
                for _ in range(40):
                    a @ b
                torch.cuda.synchronize()
                if step == steps // 2:
                    with record_function("host_wait"):
                        mark("pause_start")
                        time.sleep(pause_s)
                        mark("pause_end")
            prof.step()
    prof.export_chrome_trace(out)


def dry(out, steps, pause_s):
    """A Kineto-shaped trace of the same timeline: host spans and fake kernels on device 0."""
    base_ns = time.time_ns()
    t0 = time.perf_counter_ns()
    events = []

    def now_us():
        return (time.perf_counter_ns() - t0) / 1000.0

    for step in range(steps):
        s = now_us()
        k = s
        end = time.perf_counter() + 0.15
        while time.perf_counter() < end:  # "compute": kernels back to back while the host spins
            pass
        e = now_us()
        while k < e:
            d = min(500.0, e - k)
            events.append({"ph": "X", "cat": "kernel", "name": "fake_gemm", "pid": 0, "tid": 7, "ts": k, "dur": d})
            k += d
        if step == steps // 2:
            w = now_us()
            mark("pause_start")
            time.sleep(pause_s)
            mark("pause_end")
            events.append({"ph": "X", "cat": "user_annotation", "name": "host_wait", "pid": 1, "tid": 1,
                           "ts": w, "dur": now_us() - w})
        events.append({"ph": "X", "cat": "user_annotation", "name": "train_step", "pid": 1, "tid": 1,
                       "ts": s, "dur": now_us() - s})
    with open(out, "w") as f:
        json.dump({"schemaVersion": 1, "baseTimeNanoseconds": base_ns + 0, "traceEvents": events}, f)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--pause-s", type=float, default=0.7)
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args()
    (dry if args.dry_run else real)(args.out, args.steps, args.pause_s)
    print(f"profile-load.py: wrote {args.out}", flush=True)


if __name__ == "__main__":
    main()
