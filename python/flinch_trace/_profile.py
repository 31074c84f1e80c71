"""``with flinch_trace.profile("runs/exp1") as p:``: ``record --torch-profile`` from inside a program.

A recorder child process (``flinch-trace record --out DIR/trace.csv --seconds inf``, its marks FIFO in
``$FLINCH_MARKS`` for ``flinch_trace.mark`` / ``window`` during the block), torch.profiler armed by the
same bootstrap ``record --torch-profile`` injects (started on the first optimizer step, written to
``DIR/trace.torch.json.gz``), and after the block the joined result: ``p.result`` is the dict of
``flinch-trace trace TRACE --telemetry DIR/trace.csv --json`` (docs/torch-profile.md), with the
Perfetto file ``DIR/trace.torch.perfetto.json.gz`` beside it.

The binary is ``binary=``, else ``$FLINCH_TRACE_BIN``, else ``flinch-trace`` on ``PATH``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
import warnings
from typing import Any, Dict, List, Optional, Sequence

from . import _torch_profile

#: How long the recorder may take to start (its first rows) and to stop after SIGINT.
_START_S = 30.0
_STOP_S = 60.0


def find_binary(binary: Optional[str] = None) -> str:
    """The ``flinch-trace`` binary: ``binary``, ``$FLINCH_TRACE_BIN``, or the one on ``PATH``."""
    for cand in (binary, os.environ.get("FLINCH_TRACE_BIN")):
        if cand:
            return cand
    found = shutil.which("flinch-trace")
    if found is None:
        raise FileNotFoundError(
            "flinch_trace.profile: no flinch-trace binary: give binary=, set $FLINCH_TRACE_BIN, "
            "or put flinch-trace on PATH (cargo install --path native)"
        )
    return found


class profile:
    """Records, profiles and answers for the block (see the module's text).

    ``schedule``: (wait, warmup, active[, repeat]) optimizer steps, as ``--torch-profile=``.
    ``interval_ms``: the recorder's sampling period. ``report``: run the join after the block
    (``p.result``); False leaves only the files. After the block: ``p.result`` (a dict, or None
    when no trace was written, with a ``RuntimeWarning`` saying why), ``p.traces``, ``p.csv``,
    ``p.perfetto``.
    """

    def __init__(
        self,
        folder: "os.PathLike[str] | str",
        schedule: Sequence[int] = _torch_profile.DEFAULT_SCHEDULE,
        *,
        interval_ms: float = 10.0,
        report: bool = True,
        binary: Optional[str] = None,
    ) -> None:
        s = tuple(int(v) for v in schedule)
        if len(s) == 3:
            s = s + (1,)
        if len(s) != 4 or min(s) < 0 or s[2] < 1:
            raise ValueError(
                "schedule is (wait, warmup, active[, repeat]) optimizer steps, active at least 1; got %r"
                % (tuple(schedule),)
            )
        self.folder = os.path.abspath(os.fspath(folder))
        self.schedule = s
        self.interval_ms = interval_ms
        self.report = report
        self.binary = find_binary(binary)
        self.csv = os.path.join(self.folder, "trace.csv")
        self.traces: List[str] = []
        self.perfetto: Optional[str] = None
        self.result: Optional[Dict[str, Any]] = None
        self._proc: Optional[subprocess.Popen] = None
        self._tmp: Optional[str] = None
        self._marks_before: Optional[str] = None

    def __enter__(self) -> "profile":
        if _torch_profile._session is not None:
            raise RuntimeError(
                "flinch_trace.profile: this process is already profiled (record --torch-profile, "
                "or another profile block)"
            )
        os.makedirs(self.folder, exist_ok=True)
        self._tmp = tempfile.mkdtemp(prefix="flinch-profile-")
        fifo = os.path.join(self._tmp, "marks")
        log = open(os.path.join(self.folder, "trace.record.log"), "wb")
        try:
            self._proc = subprocess.Popen(
                [
                    self.binary, "record", "--out", self.csv, "--seconds", "inf",
                    "--interval-ms", repr(float(self.interval_ms)), "--marks-fifo", fifo,
                ],
                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
            )
        finally:
            log.close()
        self._wait_started(fifo)
        self._marks_before = os.environ.get("FLINCH_MARKS")
        os.environ["FLINCH_MARKS"] = fifo
        _torch_profile.install(os.path.join(self.folder, "trace"), self.schedule)
        return self

    def _wait_started(self, fifo: str) -> None:
        deadline = time.monotonic() + _START_S
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise RuntimeError("flinch_trace.profile: the recorder exited: " + self._log_tail())
            if os.path.exists(fifo) and os.path.exists(self.csv + ".meta.json"):
                return
            time.sleep(0.01)
        self._stop_recorder()
        raise RuntimeError("flinch_trace.profile: the recorder did not start in %.0f s" % _START_S)

    def _log_tail(self) -> str:
        try:
            with open(os.path.join(self.folder, "trace.record.log"), "rb") as f:
                return f.read()[-2000:].decode("utf-8", "replace")
        except OSError:
            return "(no log)"

    def _stop_recorder(self) -> None:
        p, self._proc = self._proc, None
        if p is None:
            return
        if p.poll() is None:
            p.send_signal(signal.SIGINT)
            try:
                p.wait(_STOP_S)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def __exit__(self, *exc: Any) -> None:
        session = _torch_profile._session
        try:
            self.traces = _torch_profile.uninstall()
        finally:
            if self._marks_before is None:
                os.environ.pop("FLINCH_MARKS", None)
            else:
                os.environ["FLINCH_MARKS"] = self._marks_before
            self._stop_recorder()
            if self._tmp:
                shutil.rmtree(self._tmp, ignore_errors=True)
        if not self.traces:
            why = "no torch.optim optimizer stepped in the block"
            if session is not None and session.prof is not None:
                why = "the block ended before the profiler's first active window (schedule %s)" % (
                    ",".join(map(str, self.schedule)))
            if session is not None and session.off:
                why = "the profiler failed"
            warnings.warn("flinch_trace.profile: no PyTorch trace: " + why, RuntimeWarning, stacklevel=2)
            return
        if not self.report:
            return
        trace = self.traces[0]
        self.perfetto = trace[: -len(".json.gz")] + ".perfetto.json.gz"
        out = subprocess.run(
            [self.binary, "trace", trace, "--telemetry", self.csv, "--json", "--perfetto", self.perfetto],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        )
        if out.returncode != 0:
            raise RuntimeError(
                "flinch_trace.profile: flinch-trace trace failed: " + out.stderr.decode("utf-8", "replace")
            )
        self.result = json.loads(out.stdout)
