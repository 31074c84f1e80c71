#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Rewrites the category `duration_sum_us` / `busy_union_us` of the trace entries in a golden
summarize output with exact values (docs/numerics.md, "Trace times": those two figures are checked against exact
arithmetic, not against the reference's float sums). Usage: exact_trace_sums.py GOLDEN RUNS_PARENT
where each entry's `source` is relative to RUNS_PARENT."""
import gzip
import json
import sys
from decimal import Decimal
from pathlib import Path


def exact(path):
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    doc = json.loads(raw, parse_float=Decimal, parse_int=Decimal)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    groups = {}
    for e in events:
        if e.get("ph") != "X" or not isinstance(e.get("dur"), Decimal):
            continue
        groups.setdefault(e.get("cat", "uncategorized"), []).append((e["ts"], e["ts"] + e["dur"]))
    out = {}
    for cat, spans in groups.items():
        total = sum((b - a for a, b in spans), Decimal(0))
        union, end = Decimal(0), None
        for a, b in sorted(spans):
            if b <= a:
                continue
            if end is None or a >= end:
                union += b - a
                end = b
            elif b > end:
                union += b - end
                end = b
        out[cat] = (float(total), float(union))
    return out


def main():
    golden, parent = Path(sys.argv[1]), Path(sys.argv[2])
    result = json.loads(golden.read_text(encoding="utf-8"))
    for entry in result["traces"]:
        if "categories" not in entry:
            continue
        sums = exact(parent / entry["source"])
        for cat, row in entry["categories"].items():
            row["duration_sum_us"], row["busy_union_us"] = sums[cat]
    golden.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
