#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""A naive, independent oracle of the step rule (docs/steps.md, `trace --steps`): per-step breakdown and outliers.

Independent of the Rust code on purpose: it reads the trace with Python's json module, numbers as Decimal,
and applies the rule by brute force, so `flinch-trace trace FILE --steps --json` can be checked against it.
- ts/dur (numbers or numeric strings) become integer ns exactly from their decimal text, sub-ns digits
  rounded half-even (as everywhere in flinch-trace); a bool is not a number. Only complete events
  (`"ph": "X"`) with a numeric ts and a numeric dur >= 0 take part.
- A step is a `user_annotation` X event whose name matches the step pattern (default `ProfilerStep#*`
  with an integer after the `#`; `--step-name P`: an exact name or a glob with `*`).
- Each step's window [ts, ts + dur) is cut at every boundary of every classified event inside it (a sweep);
  each piece goes whole to the highest-priority class with an event covering it, or to `other`.
- Outliers: d - m > max(3 * 1.4826 * MAD, 0.10 * m), computed in exact rationals (Fraction).

Usage: steps_oracle.py TRACE[.json|.json.gz] [--step-name P]  -> JSON on stdout.
The output has per step `name`, `index`, `start_ts_us` (exact: the ns written as µs with trailing zeros
trimmed to one decimal, as flinch-trace's `NsDecimal` does), `start_ns`, `duration_ns`, `duration_ms`,
`breakdown_ns`, `breakdown_ms` and `outlier`, and a `step_summary` with the median, MAD, threshold and the
outliers with their largest part.
"""
import argparse
import gzip
import json
import sys
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation
from fractions import Fraction

# Highest priority first (docs: the TensorBoard profiler plugin's order).
PARTS = ["kernel", "memcpy", "memset", "communication", "runtime", "dataloader", "cpu_exec", "other"]
NCCL_PREFIXES = ("ncclKernel_", "ncclDevKernel_")
DEFAULT_STEP_NAME = "ProfilerStep#*"
# The rule as agreed says a `cpu_op` named `enumerate(DataLoader)...`; real PyTorch (2.15, and since Kineto's
# record_function became `user_annotation`) writes the DataLoader's `__next__` scope as a `user_annotation`, so
# a stall in the data loader would otherwise fall to `other`. Both categories count here (the amended rule).
DATALOADER_CATS = ("cpu_op", "user_annotation")


def load_events(path):
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw.decode("utf-8"), parse_float=Decimal)
    events = doc if isinstance(doc, list) else doc.get("traceEvents", [])
    return [e for e in events if isinstance(e, dict)]


def to_ns(v):
    """µs decimal text -> integer ns, exactly (sub-ns digits half-even); None when not a number."""
    if isinstance(v, bool) or v is None:
        return None
    if isinstance(v, (int, Decimal)):
        d = Decimal(v)
    elif isinstance(v, str):
        try:
            d = Decimal(v.strip())
        except InvalidOperation:
            return None
    else:
        return None
    if not d.is_finite():
        return None
    return int((d * 1000).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def ns_to_us_text(ns):
    """As flinch-trace writes a clock time (NsDecimal<3>): whole part, '.', 1 to 3 decimals."""
    sign = "-" if ns < 0 else ""
    whole, frac = divmod(abs(ns), 1000)
    text = f"{frac:03d}".rstrip("0") or "0"
    return f"{sign}{whole}.{text}"


def classify(ev):
    """The event's part, or None when it has no class (annotations, python_function, flows, ...)."""
    cat, name = ev.get("cat"), ev.get("name")
    name = name if isinstance(name, str) else ""
    if cat == "kernel":
        return "communication" if name.startswith(NCCL_PREFIXES) else "kernel"
    if cat == "gpu_memcpy":
        return "memcpy"
    if cat == "gpu_memset":
        return "memset"
    if cat in ("cuda_runtime", "cuda_driver"):
        return "runtime"
    if name.startswith("enumerate(DataLoader)") and cat in DATALOADER_CATS:
        return "dataloader"
    if cat == "cpu_op":
        return "cpu_exec"
    return None


def glob_match(pattern, name):
    """`*` matches any run of characters; every other character matches itself."""
    pieces = pattern.split("*")
    if len(pieces) == 1:
        return name == pattern
    if not name.startswith(pieces[0]):
        return False
    pos = len(pieces[0])
    for mid in pieces[1:-1]:
        at = name.find(mid, pos)
        if at < 0:
            return False
        pos = at + len(mid)
    last = pieces[-1]
    return len(name) - pos >= len(last) and name.endswith(last)


def hash_index(name):
    """The integer after the last '#', or None."""
    if "#" not in name:
        return None
    tail = name.rsplit("#", 1)[1]
    return int(tail) if tail.isdigit() else None


def is_step(ev, pattern):
    name = ev.get("name")
    if ev.get("cat") != "user_annotation" or not isinstance(name, str):
        return False
    if pattern == DEFAULT_STEP_NAME:
        return name.startswith("ProfilerStep#") and hash_index(name) is not None
    return glob_match(pattern, name)


def complete_events(events):
    """(event, start_ns, end_ns) of every usable complete event, in file order."""
    out = []
    for ev in events:
        if ev.get("ph") != "X":
            continue
        ts, dur = to_ns(ev.get("ts")), to_ns(ev.get("dur"))
        if ts is None or dur is None or dur < 0:
            continue
        out.append((ev, ts, ts + dur))
    return out


def breakdown(start, end, intervals):
    """Split [start, end) by a sweep over every boundary: each elementary piece to the best active class."""
    cuts = {start, end}
    inside = []
    for part, a, b in intervals:
        a, b = max(a, start), min(b, end)
        if a < b:
            inside.append((part, a, b))
            cuts.add(a)
            cuts.add(b)
    cuts = sorted(cuts)
    result = dict.fromkeys(PARTS, 0)
    for lo, hi in zip(cuts, cuts[1:]):
        # Naive on purpose: look at every interval for every piece.
        active = {part for part, a, b in inside if a <= lo and hi <= b}
        best = next((p for p in PARTS[:-1] if p in active), "other")
        result[best] += hi - lo
    assert sum(result.values()) == end - start
    return result


def median(values):
    s = sorted(Fraction(v) for v in values)
    n = len(s)
    if n == 0:
        return None
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def ms(ns):
    """ns (int or Fraction) -> ms as the nearest f64."""
    return float(Fraction(ns) / 1_000_000)


def steps_of(events, step_name=DEFAULT_STEP_NAME):
    evs = complete_events(events)
    found = [(ts, order, ev, te) for order, (ev, ts, te) in enumerate(evs) if is_step(ev, step_name)]
    found.sort(key=lambda t: (t[0], t[1]))
    steps = []
    for ordinal, (ts, order, ev, te) in enumerate(found):
        idx = hash_index(ev["name"])
        steps.append({"name": ev["name"], "index": ordinal if idx is None else idx, "start_ns": ts, "end_ns": te,
                      "order": order})
    steps.sort(key=lambda s: (s["start_ns"], s["index"], s["order"]))
    intervals = [(classify(ev), a, b) for ev, a, b in evs if classify(ev) is not None]
    out = []
    for s in steps:
        parts = breakdown(s["start_ns"], s["end_ns"], intervals)
        out.append({
            "name": s["name"],
            "index": s["index"],
            "start_ts_us": ns_to_us_text(s["start_ns"]),
            "start_ns": s["start_ns"],
            "duration_ns": s["end_ns"] - s["start_ns"],
            "duration_ms": ms(s["end_ns"] - s["start_ns"]),
            "breakdown_ns": parts,
            "breakdown_ms": {p: ms(v) for p, v in parts.items()},
        })
    return out


def mark_outliers(steps):
    """Set `outlier` on every step; return the summary (median, MAD, threshold, outliers with largest part)."""
    durations = [s["duration_ns"] for s in steps]
    if not steps:
        return {"n": 0, "median_ms": None, "mad_ms": None, "threshold_ms": None, "outliers": []}
    m = median(durations)
    mad = median([abs(d - m) for d in durations])
    threshold = max(3 * Fraction("1.4826") * mad, Fraction(1, 10) * m)
    part_median = {p: median([s["breakdown_ns"][p] for s in steps]) for p in PARTS}
    outliers = []
    for s in steps:
        s["outlier"] = s["duration_ns"] - m > threshold
        if s["outlier"]:
            excess = {p: s["breakdown_ns"][p] - part_median[p] for p in PARTS}
            # Largest excess; ties go to the part earlier in PARTS.
            best = max(PARTS, key=lambda p: (excess[p], -PARTS.index(p)))
            outliers.append({"name": s["name"], "index": s["index"], "duration_ms": s["duration_ms"],
                             "largest_part": best, "largest_part_excess_ms": ms(excess[best])})
    return {
        "n": len(steps),
        "median_ms": ms(m),
        "mad_ms": ms(mad),
        "threshold_ms": ms(threshold),
        "median_breakdown_ms": {p: ms(v) for p, v in part_median.items()},
        "outliers": outliers,
    }


def oracle(path, step_name=DEFAULT_STEP_NAME):
    steps = steps_of(load_events(path), step_name)
    summary = mark_outliers(steps)
    return {"rule": "the step rule of docs/steps.md (tests/torch/steps_oracle.py)", "step_name": step_name,
            "steps": steps, "step_summary": summary}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--step-name", default=DEFAULT_STEP_NAME)
    args = ap.parse_args(argv)
    json.dump(oracle(args.trace, args.step_name), sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
