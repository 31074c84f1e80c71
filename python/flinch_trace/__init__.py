"""flinch-trace from Python: the command line's JSON results as dicts, and marks for its recorder.

``trace_summary``, ``steps``, ``analyze`` and ``summarize`` call the same Rust code as ``flinch-trace trace
--json``, ``analyze --json`` and ``summarize`` and return the same JSON, parsed. The work runs with
the GIL released, so threads (and Dask's threaded workers) run several at once. Bad input raises
``ValueError`` with the command line's message (it names the byte offset or line); a path that
cannot be opened raises ``OSError`` (``FileNotFoundError``, ...). See docs/python.md.
"""

from __future__ import annotations

import json
import os
from typing import Any, Dict, Iterable, Mapping, Optional, Union

from . import _native
from ._marks import mark, window
from ._profile import profile

__version__: str = _native.__version__

__all__ = [
    "trace_summary",
    "trace_summary_json",
    "steps",
    "steps_json",
    "analyze",
    "summarize",
    "merge",
    "merge_json",
    "diff",
    "diff_json",
    "mark",
    "window",
    "profile",
    "DEFAULT_TOP",
    "__version__",
]

PathLike = Union[str, "os.PathLike[str]"]

#: How many ops ``trace_summary`` lists by default (``--top``).
DEFAULT_TOP: int = _native.DEFAULT_TOP


def trace_summary(
    path: PathLike,
    top: Optional[int] = None,
    exactness: str = "native",
    mergeable: bool = False,
) -> Dict[str, Any]:
    """``flinch-trace trace PATH --json [--top N] [--bounded | --exact] [--mergeable]`` as a dict.

    ``top``: how many ops to list (default ``DEFAULT_TOP``, as the command line). ``exactness``:
    ``"native"`` (the default: exact in bounded memory, spilling to a temporary file),
    ``"bounded"`` (``--bounded``) or ``"exact"`` (``--exact``). ``mergeable``: add the
    ``"mergeable"`` section (``--mergeable``) that ``merge`` combines across ranks.
    """
    return json.loads(trace_summary_json(path, top, exactness, mergeable))


def trace_summary_json(
    path: PathLike,
    top: Optional[int] = None,
    exactness: str = "native",
    mergeable: bool = False,
) -> str:
    """``trace_summary`` as the command line's JSON text: cheaper to send between processes and to
    ``merge_json`` than a dict (no ``json.loads`` / ``json.dumps`` of the thousands of ops)."""
    return _native.trace_summary_json(os.fspath(path), top, exactness, mergeable)


def steps(
    trace: PathLike,
    telemetry: Optional[PathLike] = None,
    step_name: Optional[str] = None,
) -> Dict[str, Any]:
    """``flinch-trace trace TRACE [--telemetry CSV] --steps [--step-name PATTERN] --json`` as a dict.

    The summary's keys, then (with ``telemetry``) the join's, then ``"steps"`` (one dict per
    training step, in time order: ``name``, ``index``, ``start_ts_us``, ``duration_ms``,
    ``breakdown_ms``, ``outlier`` and, with ``telemetry`` or when the trace carries GPU power
    counters of its own, the energy figures) and
    ``"step_summary"``. ``pandas.DataFrame(result["steps"])`` gives one row per step.
    ``step_name``: the steps' annotation name, exact or a glob with ``*`` (default
    ``ProfilerStep#<N>``); a bad pattern raises ``ValueError``. See docs/steps.md.
    """
    return json.loads(steps_json(trace, telemetry, step_name))


def steps_json(
    trace: PathLike,
    telemetry: Optional[PathLike] = None,
    step_name: Optional[str] = None,
) -> str:
    """``steps`` as the command line's JSON text."""
    return _native.steps_json(
        os.fspath(trace), None if telemetry is None else os.fspath(telemetry), step_name
    )


def diff(
    a: PathLike,
    b: PathLike,
    telemetry_a: Optional[PathLike] = None,
    telemetry_b: Optional[PathLike] = None,
    top: Optional[int] = None,
    exactness: str = "native",
    threshold_pct: Optional[float] = None,
    min_gap_ms: Optional[float] = None,
    steps: bool = False,
    step_name: Optional[str] = None,
) -> Dict[str, Any]:
    """``flinch-trace diff A B --json`` as a dict: run B compared with run A (docs/diff.md).

    ``a`` and ``b``: traces (``.json``, ``.json.gz``) or summaries with their mergeable section
    (``trace_summary(..., mergeable=True)`` written to a file, or a ``merge`` output).
    ``telemetry_a`` / ``telemetry_b``: recordings (trace.csv) of the runs, for energy per
    annotation. ``top``: ops listed (default ``DEFAULT_TOP``); ``exactness`` as in
    ``trace_summary``; ``threshold_pct``: the verdict's threshold (default 1); ``min_gap_ms``:
    the shortest GPU pause counted (default 100). ``steps=True`` (``--steps``): the training
    steps compared too, the ``steps`` key (median step with its 95 % interval, the breakdowns,
    the parts that moved, energy per step); ``step_name``: their annotation's name or glob
    (``--step-name``; implies ``steps``).
    """
    return json.loads(
        diff_json(
            a, b, telemetry_a, telemetry_b, top, exactness, threshold_pct, min_gap_ms,
            steps, step_name,
        )
    )


def diff_json(
    a: PathLike,
    b: PathLike,
    telemetry_a: Optional[PathLike] = None,
    telemetry_b: Optional[PathLike] = None,
    top: Optional[int] = None,
    exactness: str = "native",
    threshold_pct: Optional[float] = None,
    min_gap_ms: Optional[float] = None,
    steps: bool = False,
    step_name: Optional[str] = None,
) -> str:
    """``diff`` as the command line's JSON text."""
    opt = lambda p: None if p is None else os.fspath(p)  # noqa: E731
    return _native.diff_json(
        os.fspath(a),
        os.fspath(b),
        opt(telemetry_a),
        opt(telemetry_b),
        top,
        exactness,
        threshold_pct,
        min_gap_ms,
        steps,
        step_name,
    )


def analyze(
    csv: PathLike,
    start: Optional[str] = None,
    end: Optional[str] = None,
    *,
    occurrence: int = 1,
    spans: bool = False,
    gpu: Optional[int] = None,
    max_gap_ms: int = 5000,
    power_source: Optional[str] = None,
) -> Dict[str, Any]:
    """``flinch-trace analyze --csv CSV --start START --end END --json`` as a dict.

    Without ``start`` and ``end``: the recording-level analysis (every span, mark and the plot
    series). A missing or misplaced mark raises ``ValueError`` with the command line's message.
    """
    text = _native.analyze_json(
        os.fspath(csv), start, end, occurrence, spans, gpu, max_gap_ms, power_source
    )
    return json.loads(text)


def summarize(
    runs: PathLike, *, skip_traces: bool = False, exact: bool = False
) -> Dict[str, Any]:
    """``flinch-trace summarize --runs RUNS --out FILE`` as a dict: what it writes to FILE."""
    text = _native.summarize_json(os.fspath(runs), skip_traces, exact)
    return json.loads(text)


def merge(
    summaries: Iterable[Union[Mapping[str, Any], str, bytes]], top: Optional[int] = None
) -> Dict[str, Any]:
    """``flinch-trace merge S1 S2 ... --json`` as a dict (docs/merge.md).

    ``summaries``: ``trace_summary(path, mergeable=True)`` results, earlier ``merge`` results
    (a merge merges again), or their JSON texts (``trace_summary_json``, ``merge_json``), in any
    mix. Counts and duration sums are exact; per-op percentiles come from mergeable log-bucket
    histograms, within the stated ``quantile_relative_error``; busy unions stay per rank. A
    summary without the mergeable section, or a malformed one, raises ``ValueError`` naming its
    index and the key at fault.
    """
    return json.loads(merge_json(summaries, top))


def merge_json(
    summaries: Iterable[Union[Mapping[str, Any], str, bytes]], top: Optional[int] = None
) -> str:
    """``merge`` as the command line's JSON text (``merge --json``)."""
    return _native.merge_json([_merge_text(s) for s in summaries], top)


# What the merge reads of a summary dict: its section, or the error of a file that failed. The
# other keys are views of the section; leaving them out spares dumping and parsing them.
_MERGE_KEYS = ("mergeable", "error")


def _merge_text(s: Union[Mapping[str, Any], str, bytes]) -> str:
    """One summary as the text the merge parses."""
    if isinstance(s, bytes):
        return s.decode()
    if isinstance(s, str):
        return s
    if isinstance(s, Mapping):
        s = {k: s[k] for k in _MERGE_KEYS if k in s}
    return json.dumps(s, separators=(",", ":"), check_circular=False)
