import os
from contextlib import AbstractContextManager
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

PathLike = Union[str, os.PathLike[str]]

__version__: str
DEFAULT_TOP: int

def trace_summary(
    path: PathLike,
    top: Optional[int] = ...,
    exactness: str = ...,
    mergeable: bool = ...,
) -> Dict[str, Any]: ...
def trace_summary_json(
    path: PathLike,
    top: Optional[int] = ...,
    exactness: str = ...,
    mergeable: bool = ...,
) -> str: ...
def analyze(
    csv: PathLike,
    start: Optional[str] = ...,
    end: Optional[str] = ...,
    *,
    occurrence: int = ...,
    spans: bool = ...,
    gpu: Optional[int] = ...,
    max_gap_ms: int = ...,
    power_source: Optional[str] = ...,
) -> Dict[str, Any]: ...
def summarize(
    runs: PathLike, *, skip_traces: bool = ..., exact: bool = ...
) -> Dict[str, Any]: ...
def merge(
    summaries: Iterable[Union[Mapping[str, Any], str, bytes]], top: Optional[int] = ...
) -> Dict[str, Any]: ...
def merge_json(
    summaries: Iterable[Union[Mapping[str, Any], str, bytes]], top: Optional[int] = ...
) -> str: ...
def mark(label: str) -> bool: ...
def window(name: str) -> AbstractContextManager[None]: ...

class profile:
    folder: str
    csv: str
    schedule: Tuple[int, int, int, int]
    traces: List[str]
    perfetto: Optional[str]
    result: Optional[Dict[str, Any]]
    def __init__(
        self,
        folder: PathLike,
        schedule: Sequence[int] = ...,
        *,
        interval_ms: float = ...,
        report: bool = ...,
        binary: Optional[str] = ...,
    ) -> None: ...
    def __enter__(self) -> "profile": ...
    def __exit__(self, *exc: Any) -> None: ...
