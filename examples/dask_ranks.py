#!/usr/bin/env python3
"""Summarize one trace per rank on a Dask cluster and merge the summaries (docs/python.md).

    python examples/dask_ranks.py RANK_TRACES...                 # a LocalCluster of 2 workers
    python examples/dask_ranks.py --scheduler tcp://host:8786 RANK_TRACES...   # any Dask cluster
    python examples/dask_ranks.py --ray [ADDR] RANK_TRACES...    # Ray instead of Dask

Each path is a trace file (`.json` or `.json.gz`) or a folder of them. Every trace is summarized
where it is read, by `flinch_trace.trace_summary(path, mergeable=True)` (the GIL released, memory
bounded per file), and only the summaries travel: they are merged with `flinch_trace.merge` in a
tree (`split_every` at a time), so no process ever holds more than a few summaries. The merged
summary is written as JSON to `--out` (default: stdout); a report line goes to stderr, with the
wall time and the peak RSS of each worker process.

`--carry text` sends the summaries between processes as their JSON text
(`trace_summary_json`, `merge_json`) instead of dicts: the same result, without a `json.loads` and a
`json.dumps` of every summary (thousands of ops each in a large trace).
"""

from __future__ import annotations

import argparse
import functools
import json
import re
import resource
import sys
import time
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional

import flinch_trace


def natural_key(path: Path) -> list:
    """`rank-2` before `rank-10`."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(path))]


def trace_paths(args: Iterable[str]) -> List[Path]:
    """Files as given; folders expanded to their `*.json` and `*.json.gz` files, in natural order."""
    paths: List[Path] = []
    for a in args:
        p = Path(a)
        if p.is_dir():
            found = [q for q in p.iterdir() if q.name.endswith((".json", ".json.gz")) and q.is_file()]
            paths.extend(sorted(found, key=natural_key))
        else:
            paths.append(p)
    return paths


def merge_all(summaries: Iterable[Dict[str, Any]]) -> Dict[str, Any]:
    """One step of the tree: summaries (per rank or already merged) into one."""
    return flinch_trace.merge(list(summaries))


def merge_all_text(summaries: Iterable[str]) -> str:
    """`merge_all` on JSON texts."""
    return flinch_trace.merge_json(list(summaries))


def pass_one(merge):
    """`merge` for the partitions: a partition of one summary (one trace per partition) passes
    through unmerged, as `merge` takes per-rank summaries and merged ones alike; the tree above
    merges it."""

    def partition(summaries: Iterable[Any]) -> Any:
        parts = list(summaries)
        return parts[0] if len(parts) == 1 else merge(parts)

    return partition


def peak_rss_mib() -> float:
    """This process's peak resident set size, MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def on_dask(paths: List[Path], client, summarize, merge, split_every: int):
    """`from_sequence(paths).map(summarize)` reduced by `merge` in a tree of `split_every`."""
    import dask.bag as db

    bag = db.from_sequence([str(p) for p in paths], npartitions=len(paths))
    merged = bag.map(summarize).reduction(pass_one(merge), merge, split_every=split_every)
    return client.compute(merged).result()


def on_ray(paths: List[Path], summarize, merge, split_every: int):
    """The same on Ray (started): a task per trace, then merge tasks in a tree of `split_every`."""
    import ray

    # ray.remote takes functions, not functools.partial objects.
    def summarize_one(path: str):
        return summarize(path)

    def merge_some(*parts):
        return merge(parts)

    one = ray.remote(summarize_one)
    step = ray.remote(merge_some)
    refs = [one.remote(str(p)) for p in paths]
    while len(refs) > 1:
        refs = [step.remote(*refs[i : i + split_every]) for i in range(0, len(refs), split_every)]
    return ray.get(refs[0])


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="+", help="rank traces, or folders of them")
    where = ap.add_mutually_exclusive_group()
    where.add_argument("--scheduler", metavar="ADDR", help="a running Dask scheduler's address")
    where.add_argument("--ray", nargs="?", const="", metavar="ADDR",
                       help="run on Ray (a local one, or the cluster at ADDR)")
    ap.add_argument("--workers", type=int, default=2, help="LocalCluster workers (default 2)")
    ap.add_argument("--threads-per-worker", type=int, default=1)
    ap.add_argument("--split-every", type=int, default=8, help="summaries merged at a time (default 8)")
    ap.add_argument("--top", type=int, default=None, help="ops to list (default as the CLI)")
    ap.add_argument("--exactness", default="native", choices=["native", "bounded", "exact"])
    ap.add_argument("--carry", default="dict", choices=["dict", "text"],
                    help="what travels between processes: dicts (default) or JSON text")
    ap.add_argument("--out", type=Path, help="write the merged summary here (default: stdout)")
    args = ap.parse_args(argv)
    if args.split_every < 2:
        ap.error("--split-every must be at least 2")

    paths = trace_paths(args.paths)
    if not paths:
        ap.error("no trace files found")
    text = args.carry == "text"
    summarize = functools.partial(
        flinch_trace.trace_summary_json if text else flinch_trace.trace_summary,
        top=args.top,
        exactness=args.exactness,
        mergeable=True,
    )
    merge = merge_all_text if text else merge_all
    t0 = time.perf_counter()
    rss: Dict[str, float] = {}
    idle: Dict[str, float] = {}
    if args.ray is not None:
        import ray

        if args.ray:
            ray.init(address=args.ray)
        else:
            ray.init(include_dashboard=False)
        try:
            t0 = time.perf_counter()
            merged = on_ray(paths, summarize, merge, args.split_every)
        finally:
            ray.shutdown()
        where_text = f"Ray{' at ' + args.ray if args.ray else ' (local)'}"
    else:
        from distributed import Client, LocalCluster

        if args.scheduler:
            client = Client(args.scheduler)
            cluster = None
            where_text = f"Dask at {args.scheduler}"
        else:
            cluster = LocalCluster(
                n_workers=args.workers,
                threads_per_worker=args.threads_per_worker,
                processes=True,
                dashboard_address=None,
            )
            client = Client(cluster)
            where_text = f"LocalCluster of {args.workers} workers x {args.threads_per_worker} threads"
        try:
            idle = client.run(peak_rss_mib)
            t0 = time.perf_counter()
            merged = on_dask(paths, client, summarize, merge, args.split_every)
            rss = client.run(peak_rss_mib)
        finally:
            client.close()
            if cluster is not None:
                cluster.close()
    seconds = time.perf_counter() - t0
    out = merged if text else json.dumps(merged, indent=2)
    if args.out:
        args.out.write_text(out + "\n")
    else:
        print(out)
    per_worker = ", ".join(f"{v:.0f}" for v in rss.values()) or "n/a"
    before = ", ".join(f"{v:.0f}" for v in idle.values()) or "n/a"
    print(
        f"dask_ranks: {len(paths)} traces on {where_text}, carrying {args.carry}: {seconds:.2f} s; "
        f"peak RSS per worker (MiB): {per_worker} (before the work: {before})",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
