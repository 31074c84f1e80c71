"""A real NVTX client for the flinch-nvtx tests: the `nvtx` Python package (NVTX v3 loader in its
compiled module) running nested ranges, push/pop, start/end ranges, a domain, marks, and
overlapping same-name ranges on two threads.

Prints `span <start label> <lo_ns> <hi_ns>` for each range (bounds on the duration its marks must
give: the library reads the clock inside the NVTX call, between this script's readings around it)
and `mark <label>` for each mark. time.perf_counter_ns reads CLOCK_MONOTONIC on Linux.
"""
import os
import sys
import threading
import time

import nvtx

now = time.perf_counter_ns


def span(label, before_start, after_start, before_end, after_end):
    print(f"span {label} {before_end - after_start} {after_end - before_start}", flush=True)


def main():
    # Nested ranges through the context manager (the default domain).
    t0 = now()
    with nvtx.annotate("py_outer"):
        t1 = now()
        time.sleep(0.02)
        u0 = now()
        with nvtx.annotate("py_inner", color="red"):
            u1 = now()
            time.sleep(0.01)
            u2 = now()
        u3 = now()
        time.sleep(0.005)
        t2 = now()
    t3 = now()
    span("py_inner_start", u0, u1, u2, u3)
    span("py_outer_start", t0, t1, t2, t3)

    # Push/pop.
    t0 = now()
    nvtx.push_range("py_push")
    t1 = now()
    time.sleep(0.012)
    t2 = now()
    nvtx.pop_range()
    t3 = now()
    span("py_push_start", t0, t1, t2, t3)

    # Start/end ranges, overlapping (not nested).
    t0 = now()
    ra = nvtx.start_range("py_se_a")
    t1 = now()
    time.sleep(0.005)
    u0 = now()
    rb = nvtx.start_range("py_se_b")
    u1 = now()
    time.sleep(0.005)
    t2 = now()
    nvtx.end_range(ra)
    t3 = now()
    time.sleep(0.005)
    u2 = now()
    nvtx.end_range(rb)
    u3 = now()
    span("py_se_a_start", t0, t1, t2, t3)
    span("py_se_b_start", u0, u1, u2, u3)

    # A domain: ranges, a start/end range and a mark in it.
    t0 = now()
    with nvtx.annotate("py_dom_range", domain="pydom"):
        t1 = now()
        time.sleep(0.008)
        t2 = now()
    t3 = now()
    span("pydom:py_dom_range_start", t0, t1, t2, t3)
    t0 = now()
    r = nvtx.start_range("py_dom_se", domain="pydom")
    t1 = now()
    time.sleep(0.006)
    t2 = now()
    nvtx.end_range(r)
    t3 = now()
    span("pydom:py_dom_se_start", t0, t1, t2, t3)
    nvtx.mark("py_dom_mark", domain="pydom")
    print("mark pydom:py_dom_mark", flush=True)

    # Marks.
    nvtx.mark("py_mark")
    print("mark py_mark", flush=True)
    nvtx.mark("py mark\nwith controls")
    print("mark py mark with controls", flush=True)

    # A forked child records its own ranges (its library state is reset by the fork handler),
    # exits through sys.exit so the library's exit handler flushes them, and reports its own
    # statistics line: two processes in the sidecar.
    pid = os.fork()
    if pid == 0:
        t0 = now()
        with nvtx.annotate("py_child"):
            t1 = now()
            time.sleep(0.01)
            t2 = now()
        t3 = now()
        span("py_child_start", t0, t1, t2, t3)
        sys.exit(0)
    os.waitpid(pid, 0)

    # Overlapping same-name ranges on two threads: A over [0, 40] ms, B over [15, 60] ms.
    def work(delay_s, hold_s):
        time.sleep(delay_s)
        t0 = now()
        with nvtx.annotate("py_work"):
            t1 = now()
            time.sleep(hold_s)
            t2 = now()
        t3 = now()
        span("py_work_start", t0, t1, t2, t3)

    ts = [threading.Thread(target=work, args=a) for a in [(0.0, 0.04), (0.015, 0.045)]]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return 0


if __name__ == "__main__":
    sys.exit(main())
