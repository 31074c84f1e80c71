#!/usr/bin/env python3
"""Writes N small rank traces with known content, for the Dask test (python/tests/test_dask.py).

Usage: tests/ranks/gen_ranks.py OUT_DIR [N]     (default 16; files rank-<r>.json, and .json.gz for odd r)

Rank r (0-based) holds, on one process and two threads:
  - r + 1 `kernel` X events `gemm`, each 100 us, back to back on tid 1;
  - 2 `kernel` X events `allreduce` of 10 * (r + 1) us each, on tid 2, overlapping the gemms;
  - one `user_annotation` B/E pair `step` around everything, on tid 3;
  - one `M` metadata event and one `i` instant event.
`expected(n)` gives the merged totals that follow; the test checks the merge against them.
"""

from __future__ import annotations

import gzip
import json
import sys
from pathlib import Path


def rank_events(r: int) -> list[dict]:
    t0 = 1_000_000 + 1000 * r
    events = [{"ph": "M", "name": "process_name", "pid": r, "args": {"name": f"rank {r}"}}]
    events.append({"ph": "B", "cat": "user_annotation", "name": "step", "pid": r, "tid": 3, "ts": t0})
    for k in range(r + 1):
        events.append({"ph": "X", "cat": "kernel", "name": "gemm", "pid": r, "tid": 1,
                       "ts": t0 + 100 * k, "dur": 100})
    for k in range(2):
        events.append({"ph": "X", "cat": "kernel", "name": "allreduce", "pid": r, "tid": 2,
                       "ts": t0 + 50 * k, "dur": 10 * (r + 1)})
    events.append({"ph": "i", "name": "mark", "pid": r, "tid": 3, "ts": t0 + 1, "s": "t"})
    events.append({"ph": "E", "cat": "user_annotation", "name": "step", "pid": r, "tid": 3,
                   "ts": t0 + 100 * (r + 1) + 5})
    return events


def expected(n: int) -> dict:
    """Merged totals of ranks 0..n-1."""
    gemm_n = sum(r + 1 for r in range(n))
    gemm_us = 100 * gemm_n
    allreduce_us = sum(2 * 10 * (r + 1) for r in range(n))
    step_us = sum(100 * (r + 1) + 5 for r in range(n))
    return {
        "ranks": n,
        "events": sum(len(rank_events(r)) for r in range(n)),
        "duration_events": gemm_n + 2 * n + n,
        "duration_sum_us": gemm_us + allreduce_us + step_us,
        "ops": {
            ("kernel", "gemm"): (gemm_n, gemm_us),
            ("kernel", "allreduce"): (2 * n, allreduce_us),
            ("user_annotation", "step"): (n, step_us),
        },
    }


def write(out: Path, n: int) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for r in range(n):
        text = json.dumps({"traceEvents": rank_events(r), "displayTimeUnit": "ms"}, indent=1)
        if r % 2:
            p = out / f"rank-{r}.json.gz"
            p.write_bytes(gzip.compress(text.encode(), mtime=0))
        else:
            p = out / f"rank-{r}.json"
            p.write_text(text)
        paths.append(p)
    return paths


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    for p in write(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) == 3 else 16):
        print(p)
