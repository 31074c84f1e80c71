#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Exact (Decimal / integer-ns) oracle for flinch-trace's per-category trace figures.

Independent of the Rust code: parses the trace with Python's json module and Decimal numbers,
and applies the trace summary rules (docs/cli.md, "trace") with flinch-trace's documented semantics:
- ts/dur (numbers, or numeric strings) become integer nanoseconds, sub-ns digits rounded
  half-even; a bool is not a number;
- X events with a numeric ts and a numeric dur >= 0 count; B/E pairs are matched per (pid, tid)
  as a stack and count with the B's cat; a missing or non-string cat is "uncategorized";
- duration_sum and busy_union (union of [ts, ts+dur)) are exact integers of ns, printed also as
  float(Decimal(ns) / 1000), i.e. the correctly rounded microseconds.
Tolerates the bare-array form and a truncated document (reads complete events only).
Usage: scripts/golden/trace-exact.py FILE  -> JSON on stdout.
"""
import gzip
import json
import re
import sys
from decimal import ROUND_HALF_EVEN, Decimal, InvalidOperation


def load_events(path):
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    text = raw.decode("utf-8", errors="replace")
    try:
        doc = json.loads(text, parse_float=Decimal, strict=False)
        if isinstance(doc, list):
            return doc, True
        events = doc.get("traceEvents")
        return (events if isinstance(events, list) else []), True
    except json.JSONDecodeError:
        pass
    # Truncated: decode complete elements one by one after the array start.
    m = re.search(r'"traceEvents"\s*:\s*\[', text)
    pos = m.end() if m else text.index("[") + 1
    dec = json.JSONDecoder(parse_float=Decimal, strict=False)
    events = []
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        try:
            ev, pos = dec.raw_decode(text, pos)
        except json.JSONDecodeError:
            return events, False
        events.append(ev)


def to_ns(v):
    if isinstance(v, bool) or v is None:
        return None
    try:
        d = Decimal(v) if isinstance(v, (int, Decimal)) else Decimal(str(v).strip()) if isinstance(v, str) else None
    except InvalidOperation:
        return None
    if d is None or not d.is_finite():
        return None
    return int((d * 1000).quantize(Decimal(1), rounding=ROUND_HALF_EVEN))


def union_ns(iv):
    total, end = 0, None
    for a, b in sorted(iv):
        if b <= a:
            continue
        if end is None or a >= end:
            total += b - a
            end = b
        elif b > end:
            total += b - end
            end = b
    return total


def main():
    events, complete = load_events(sys.argv[1])
    cats = {}
    stacks = {}
    n_objects = 0
    has_be = False
    for ev in events:
        if not isinstance(ev, dict):
            continue
        n_objects += 1
        ph = ev.get("ph")
        cat = ev.get("cat")
        cat = cat if isinstance(cat, str) else "uncategorized"
        ts = to_ns(ev.get("ts"))
        if ph == "X":
            dur = to_ns(ev.get("dur"))
            if ts is None or dur is None or dur < 0:
                continue
            iv = (ts, ts + dur)
        elif ph == "B":
            has_be = True
            if ts is not None:
                stacks.setdefault((json.dumps(ev.get("pid")), json.dumps(ev.get("tid"))), []).append((ts, cat))
            continue
        elif ph == "E":
            has_be = True
            st = stacks.get((json.dumps(ev.get("pid")), json.dumps(ev.get("tid"))))
            if not st:
                continue
            bts, cat = st.pop()
            if ts is None or ts < bts:
                continue
            iv = (bts, ts)
        else:
            continue
        c = cats.setdefault(cat, [])
        c.append(iv)
    out = {
        "events": n_objects,
        "complete": complete,
        "has_begin_end": has_be,
        "categories": {
            k: {
                "events": len(v),
                "duration_sum_ns": sum(b - a for a, b in v),
                "busy_union_ns": union_ns(v),
                "duration_sum_us": float(Decimal(sum(b - a for a, b in v)) / 1000),
                "busy_union_us": float(Decimal(union_ns(v)) / 1000),
            }
            for k, v in cats.items()
        },
    }
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
