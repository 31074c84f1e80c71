"""`flinch_trace.mark` and `window`: the recorder's line format, read back by the recorder itself,
and never a long wait."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
import time
import warnings

import flinch_trace
import pytest
from flinch_trace import _marks

from conftest import REPO


@pytest.fixture
def fresh_sink(monkeypatch):
    """A new sink per test (the module keeps one open file per process)."""
    monkeypatch.setattr(_marks, "_SINK", _marks._Sink())
    yield


def test_line_format_is_the_recorders():
    assert _marks.line(42, " infer start ") == b"@42 infer start\n"
    assert _marks.line(42, "x_start", thread=7) == b"@42:7 x_start\n"
    for bad in ["", "  ", "a\nb", "a\rb", "x" * 5000]:
        with pytest.raises(ValueError):
            _marks.line(1, bad)


def test_lines_are_the_shared_cases_flinch_core_writes():
    """tests/marks/lines.json: the bytes (or the error) of each case, which flinch-core's
    `marks_line::write_mark` is tested against too, so both senders write the same lines."""
    cases = json.loads((REPO / "tests" / "marks" / "lines.json").read_text(encoding="utf-8"))["cases"]
    assert len(cases) >= 20
    for case in cases:
        repeat = case.get("repeat", 1)
        label = case["label"] * repeat
        if "error" in case:
            with pytest.raises(ValueError) as e:
                _marks.line(case["t_mono_ns"], label, case["thread"])
            assert str(e.value) == "mark: " + case["error"], case
        else:
            want = case["line"].replace("{label}", label) if repeat > 1 else case["line"]
            assert _marks.line(case["t_mono_ns"], label, case["thread"]) == want.encode(), case


def test_marks_to_a_fifo_with_a_reader(tmp_path, monkeypatch, fresh_sink):
    fifo = tmp_path / "marks"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        monkeypatch.setenv("FLINCH_MARKS", str(fifo))
        before = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        assert flinch_trace.mark("step 1") is True
        with flinch_trace.window("prefill"):
            pass
        after = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        text = os.read(reader, 1 << 16).decode()
    finally:
        os.close(reader)
    lines = text.splitlines()
    assert len(lines) == 3, lines
    stamp, label = lines[0].split(" ", 1)
    assert label == "step 1"
    assert before <= int(stamp[1:]) <= after
    tid = str(__import__("threading").get_native_id())
    s0, l0 = lines[1].split(" ", 1)
    s1, l1 = lines[2].split(" ", 1)
    assert (l0, l1) == ("prefill_start", "prefill_end")
    t0, k0 = s0[1:].split(":")
    t1, k1 = s1[1:].split(":")
    assert k0 == k1 == tid
    assert int(stamp[1:]) <= int(t0) <= int(t1) <= after


def test_marks_to_a_plain_file(tmp_path, monkeypatch, fresh_sink):
    path = tmp_path / "marks.txt"
    path.write_text("")
    monkeypatch.setenv("FLINCH_MARKS", str(path))
    assert flinch_trace.mark("a")
    assert flinch_trace.mark("b")
    assert [l.split(" ", 1)[1] for l in path.read_text().splitlines()] == ["a", "b"]


def test_no_reader_is_reported_at_once_not_waited_for(tmp_path, monkeypatch, fresh_sink):
    fifo = tmp_path / "marks"
    os.mkfifo(fifo)
    monkeypatch.setenv("FLINCH_MARKS", str(fifo))
    t0 = time.monotonic()
    with pytest.warns(RuntimeWarning, match="no recorder is listening"):
        assert flinch_trace.mark("lost") is False
    with pytest.warns(RuntimeWarning, match="no recorder is listening"):
        with flinch_trace.window("w"):
            pass
    assert time.monotonic() - t0 < 1.0


def test_unset_is_a_no_op_with_one_warning(monkeypatch, fresh_sink):
    monkeypatch.delenv("FLINCH_MARKS", raising=False)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert flinch_trace.mark("a") is False
        assert flinch_trace.mark("b") is False
        with flinch_trace.window("c"):
            pass
    assert [str(w.message) for w in caught if "FLINCH_MARKS" in str(w.message)] != []
    assert len(caught) == 1, [str(w.message) for w in caught]


def test_full_pipe_gives_up_after_a_bounded_wait(tmp_path, monkeypatch, fresh_sink):
    fifo = tmp_path / "marks"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    monkeypatch.setattr(_marks, "_FULL_PIPE_S", 0.2)
    try:
        monkeypatch.setenv("FLINCH_MARKS", str(fifo))
        label = "x" * 4000
        sent = 0
        t0 = time.monotonic()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            # Nobody reads: the pipe fills, then a mark is dropped after ~0.2 s.
            while flinch_trace.mark(label):
                sent += 1
                assert sent < 10_000
        assert time.monotonic() - t0 < 5
        assert any("stayed full" in str(w.message) for w in caught)
        assert sent >= 1
    finally:
        os.close(reader)


CHILD = r"""
import sys, threading, time
import flinch_trace
t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
assert flinch_trace.mark("alpha")
t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
def work():
    with flinch_trace.window("prefill"):
        time.sleep(0.05)
threads = [threading.Thread(target=work) for _ in range(2)]
for t in threads: t.start()
for t in threads: t.join()
with flinch_trace.window("decode"):
    time.sleep(0.03)
print(t0, t1)
"""


def test_recorder_reads_the_marks(cli, tmp_path):
    """`flinch-trace record -- python CHILD`: the marks land in trace.csv with the sender's stamps,
    the windows pair per thread, and `analyze` measures them."""
    script = tmp_path / "gpu.script"
    script.write_text("gpus 1\n200,90,30,1900,60,1000,5000,0\n210,95,31,1950,61,1100,5000,0\n")
    out = tmp_path / "trace.csv"
    done = subprocess.run(
        [str(cli), "record", "--scripted-gpu", str(script), "--no-rapl", "--no-host",
         "--no-nvtx", "--interval-ms", "5", "--out", str(out), "--", sys.executable, "-c", CHILD],
        capture_output=True, text=True, timeout=120, cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    t0, t1 = map(int, done.stdout.split())
    with open(out, newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["row_type"] == "MARK"]
    labels = [r["label"] for r in rows]
    assert labels[0] == "begin" and labels[-1] == "end", labels
    assert sorted(labels[1:-1]) == sorted(
        ["cmd_start", "cmd_end", "alpha", "prefill_start", "prefill_start", "prefill_end", "prefill_end",
         "decode_start", "decode_end"]
    ), labels
    alpha = next(r for r in rows if r["label"] == "alpha")
    assert t0 <= int(alpha["t_mono_ns"]) <= t1
    threads = {r["mark_thread"] for r in rows if r["label"].startswith("prefill")}
    assert len(threads) == 2 and "" not in threads, threads
    spans = flinch_trace.analyze(out, spans=True)["spans"]
    prefill = [s for s in spans if s["start_label"] == "prefill_start" and s["kind"] == "pair"]
    assert len(prefill) == 2, spans
    for s in prefill:
        assert 0.045 <= s["duration_s"] < 1.0, s
    window = flinch_trace.analyze(out, "decode_start", "decode_end")["window"]
    assert 0.025 <= window["duration_s"] < 1.0, window
