"""Marks for a running ``flinch-trace record``: lines written to the FIFO named by ``$FLINCH_MARKS``.

The line format is the recorder's (docs/formats.md, "Marks: the FIFO line format"), written here
in pure Python (this runs in the user's process) and held equal to flinch-core's writer by the
shared cases in ``tests/marks/lines.json``:
``@<t_mono_ns> LABEL`` for ``mark``, stamped by this process with CLOCK_MONOTONIC (the recorder's
``t_mono_ns`` clock) so that queueing does not shift the mark, and ``@<t_mono_ns>:<thread> LABEL``
for ``window``, whose ``NAME_start`` / ``NAME_end`` pair then matches only within one thread.

Nothing here blocks for long: the FIFO is opened non-blocking (no recorder listening is reported,
not waited for), and a full pipe is retried for at most ``_FULL_PIPE_S`` seconds. A mark that cannot
be sent is dropped with a ``RuntimeWarning``; an unset ``$FLINCH_MARKS`` makes marks no-ops, with
one warning.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import threading
import time
import warnings
from typing import Iterator, Optional

#: Longest line, bytes: PIPE_BUF, so one write of a line is atomic.
MAX_LINE = 4096
#: What is trimmed from a label's ends: Unicode's White_Space, as the recorder (Rust's
#: ``str::trim``) trims it. Python's ``str.strip()`` would also take U+001C..U+001F.
_WHITESPACE = (
    "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006"
    "\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
#: How long a full pipe (a recorder that stopped reading) is retried before the mark is dropped.
_FULL_PIPE_S = 2.0

if hasattr(time, "clock_gettime_ns") and hasattr(time, "CLOCK_MONOTONIC"):

    def mono_ns() -> int:
        """CLOCK_MONOTONIC in nanoseconds: the clock of the recorder's ``t_mono_ns``."""
        return time.clock_gettime_ns(time.CLOCK_MONOTONIC)

else:  # pragma: no cover - the recorder runs on Linux

    def mono_ns() -> int:
        """The monotonic clock in nanoseconds."""
        return time.monotonic_ns()


def line(t_mono_ns: int, label: str, thread: Optional[int] = None) -> bytes:
    """The line sent for ``label`` at ``t_mono_ns`` (keyed by ``thread`` when given).

    Raises ``ValueError`` for an empty label, one with a newline, or a line over ``MAX_LINE``
    bytes, as ``flinch-trace mark`` does.
    """
    label = label.strip(_WHITESPACE)
    if not label:
        raise ValueError("mark: empty label")
    if "\n" in label or "\r" in label:
        raise ValueError("mark: a label is one line (no newline)")
    stamp = f"@{t_mono_ns}" if thread is None else f"@{t_mono_ns}:{thread}"
    data = f"{stamp} {label}\n".encode()
    if len(data) > MAX_LINE:
        raise ValueError(f"mark: label too long (the line must fit in {MAX_LINE} bytes)")
    return data


class _Sink:
    """The open marks file, shared by every thread; reopened when ``$FLINCH_MARKS`` changes."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._path: Optional[str] = None
        self._fd: Optional[int] = None
        self._warned_unset = False

    def _close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd = None
        self._path = None

    def _open(self, path: str) -> int:
        # O_NONBLOCK: a FIFO without a reader fails at once with ENXIO instead of blocking.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        if not stat.S_ISFIFO(os.fstat(fd).st_mode):
            # A plain file (e.g. for tests or later import): ordinary blocking appends.
            os.set_blocking(fd, True)
        return fd

    def send(self, data: bytes) -> bool:
        path = os.environ.get("FLINCH_MARKS", "")
        with self._lock:
            if not path:
                if not self._warned_unset:
                    self._warned_unset = True
                    warnings.warn(
                        "flinch_trace.mark: FLINCH_MARKS is not set (run under "
                        "`flinch-trace record -- CMD`); marks are not recorded",
                        RuntimeWarning,
                        stacklevel=3,
                    )
                return False
            if path != self._path:
                self._close()
                try:
                    self._fd = self._open(path)
                except OSError as e:
                    why = (
                        f"no recorder is listening on {path}"
                        if e.errno == errno.ENXIO
                        else f"{path}: {e.strerror}"
                    )
                    warnings.warn(f"flinch_trace.mark: {why}; mark dropped", RuntimeWarning, stacklevel=3)
                    return False
                self._path = path
            return self._write(data)

    def _write(self, data: bytes) -> bool:
        assert self._fd is not None
        give_up = time.monotonic() + _FULL_PIPE_S
        while True:
            try:
                n = os.write(self._fd, data)
            except BlockingIOError:
                if time.monotonic() > give_up:
                    warnings.warn(
                        f"flinch_trace.mark: the FIFO {self._path} stayed full for {_FULL_PIPE_S:g} s "
                        "(is the recorder stuck?); mark dropped",
                        RuntimeWarning,
                        stacklevel=4,
                    )
                    return False
                time.sleep(0.001)
                continue
            except InterruptedError:
                continue
            except OSError as e:
                # EPIPE: the recorder went away. Reopen on the next mark.
                path = self._path
                self._close()
                warnings.warn(f"flinch_trace.mark: writing {path}: {e.strerror}; mark dropped", RuntimeWarning, stacklevel=4)
                return False
            if n != len(data):
                warnings.warn("flinch_trace.mark: short write to the FIFO", RuntimeWarning, stacklevel=4)
                return False
            return True


_SINK = _Sink()


def mark(label: str) -> bool:
    """Sends the mark ``label`` to the recorder at ``$FLINCH_MARKS``, stamped now.

    Returns whether it was written; a mark that cannot be sent is dropped with a
    ``RuntimeWarning`` (never an exception, never a long wait). An invalid label raises
    ``ValueError``.
    """
    return _SINK.send(line(mono_ns(), label))


@contextlib.contextmanager
def window(name: str) -> Iterator[None]:
    """Marks ``NAME_start`` on entry and ``NAME_end`` on exit (also on an exception), keyed by
    this thread so that windows of one name in several threads pair up correctly."""
    thread = threading.get_native_id()
    start = line(mono_ns(), f"{name}_start", thread)
    end_label = f"{name}_end"
    line(0, end_label, thread)  # check the label before the window opens
    _SINK.send(start)
    try:
        yield
    finally:
        _SINK.send(line(mono_ns(), end_label, thread))
