#!/usr/bin/env python3
"""GPU load for scripts/gpu/check.sh: compute, a deliberate sleep pause, compute, each between marks.

Marks go to the recorder's FIFO ($FLINCH_MARKS, set by `flinch-trace record -- CMD`) as
`@<t_mono_ns> <label>` lines; time.perf_counter_ns() reads CLOCK_MONOTONIC on Linux, as the recorder.
Uses PyTorch, else CuPy. `--dry-run` replaces the GPU work with a CPU spin (to check the plumbing on a
machine without a GPU).
"""
import argparse
import os
import time


def mark(label):
    fifo = os.environ.get("FLINCH_MARKS")
    if not fifo:
        raise SystemExit("FLINCH_MARKS is not set: run me under `flinch-trace record -- ...`")
    with open(fifo, "w") as f:
        f.write(f"@{time.perf_counter_ns()} {label}\n")


def gpu_work():
    try:
        import torch

        if torch.cuda.is_available():
            a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
            b = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)

            def run(seconds):
                end = time.perf_counter() + seconds
                while time.perf_counter() < end:
                    for _ in range(20):
                        a @ b
                    torch.cuda.synchronize()

            return "torch", run
    except ImportError:
        pass
    import cupy

    a = cupy.random.random((8192, 8192), dtype=cupy.float32)

    def run(seconds):
        end = time.perf_counter() + seconds
        while time.perf_counter() < end:
            for _ in range(5):
                a @ a
            cupy.cuda.Device().synchronize()

    return "cupy", run


def cpu_spin(seconds):
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--compute-s", type=float, default=3.0)
    ap.add_argument("--pause-s", type=float, default=2.0)
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args()
    if args.dry_run:
        lib, run = "cpu (dry run)", cpu_spin
    else:
        lib, run = gpu_work()
        run(0.5)  # warm-up: kernels loaded, clocks up
    print(f"load.py: {lib}", flush=True)
    mark("compute_start")
    run(args.compute_s)
    mark("compute_end")
    mark("pause_start")
    time.sleep(args.pause_s)
    mark("pause_end")
    mark("compute2_start")
    run(args.compute_s)
    mark("compute2_end")


if __name__ == "__main__":
    main()
