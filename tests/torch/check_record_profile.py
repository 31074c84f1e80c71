#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks for tests/torch/record_profile.sh (standard library only).

  check_record_profile.py clock TRACE STAMPS CSV
      The trace is whole (gzip JSON), has ProfilerStep#N host annotations, and each one's Unix start
      (baseTimeNanoseconds + ts, exact in integer ns) lies within [t_before, t_after] of iteration N's
      optimizer.step() as the program stamped it with CLOCK_REALTIME (1 us either side for the trace's
      microsecond text), and within the recording's SAMPLE rows' t_wall_ns span: one clock.
  check_record_profile.py whole TRACE [MIN_STEPS]
      The trace parses whole and holds at least MIN_STEPS (default 1) ProfilerStep#N annotations.
"""
import csv
import gzip
import json
import re
import sys
from decimal import Decimal

SLACK_NS = 1000


def steps_unix_ns(trace):
    with gzip.open(trace, "rt") as f:
        d = json.load(f)
    base = d.get("baseTimeNanoseconds")
    steps = {}
    for e in d["traceEvents"]:
        m = re.fullmatch(r"ProfilerStep#(\d+)", str(e.get("name", "")))
        if m and e.get("cat") == "user_annotation" and e.get("ph") == "X":
            ts_ns = int(Decimal(str(e["ts"])) * 1000)
            steps[int(m.group(1))] = None if base is None else int(base) + ts_ns
    return base, steps


def fail(msg):
    print("FAIL check_record_profile: " + msg, file=sys.stderr)
    sys.exit(1)


def clock(trace, stamps, rec):
    base, steps = steps_unix_ns(trace)
    if base is None:
        fail("%s has no baseTimeNanoseconds" % trace)
    if not steps:
        fail("%s has no ProfilerStep#N" % trace)
    st = {}
    for line in open(stamps):
        i, t0, t1 = (int(v) for v in line.split())
        st[i] = (t0, t1)
    walls = []
    with open(rec, newline="") as f:
        for row in csv.DictReader(f):
            if row.get("row_type") == "SAMPLE" and row.get("t_wall_ns"):
                walls.append(int(row["t_wall_ns"]))
    if not walls:
        fail("%s has no SAMPLE rows with t_wall_ns" % rec)
    lo, hi = min(walls), max(walls)
    worst = 0
    for n, u in sorted(steps.items()):
        if n not in st:
            fail("ProfilerStep#%d has no stamp (iterations %d..%d)" % (n, min(st), max(st)))
        t0, t1 = st[n]
        if not (t0 - SLACK_NS <= u <= t1 + SLACK_NS):
            fail("ProfilerStep#%d starts at %d ns, outside optimizer.step() [%d, %d] (by %d ns)"
                 % (n, u, t0, t1, (t0 - u) if u < t0 else (u - t1)))
        if not lo <= u <= hi:
            fail("ProfilerStep#%d at %d ns is outside the recording [%d, %d]" % (n, u, lo, hi))
        worst = max(worst, t1 - t0)
    print("clock: %d ProfilerSteps each within its optimizer.step() (widest %.1f us) and the recording"
          % (len(steps), worst / 1000))


def whole(trace, min_steps=1):
    _, steps = steps_unix_ns(trace)
    if len(steps) < min_steps:
        fail("%s holds %d ProfilerSteps, wanted at least %d" % (trace, len(steps), min_steps))
    print("whole: %s parses, %d ProfilerSteps (#%d..#%d)" % (trace, len(steps), min(steps), max(steps)))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "clock":
        clock(*sys.argv[2:5])
    elif cmd == "whole":
        whole(sys.argv[2], int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    else:
        fail("unknown check " + cmd)
