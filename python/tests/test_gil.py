"""Each function releases the GIL while it works: a Python thread keeps running during a call.

With the GIL held for the whole call (no `Python::detach`), the ticker below cannot run until the
call returns, so the longest gap between its ticks is the call's whole duration, and the test
fails.
"""

from __future__ import annotations

import threading
import time

import flinch_trace
import pytest

#: Bytes of the generated trace: long enough that one call takes a few tenths of a second.
TRACE_BYTES = 150_000_000


@pytest.fixture(scope="module")
def big_trace(tmp_path_factory):
    path = tmp_path_factory.mktemp("gil") / "big.json"
    events = ",\n".join(
        '{"ph":"X","name":"k%d","ts":%d,"dur":%d}' % (i % 97, 7 * i, 3 + i % 11)
        for i in range(5000)
    )
    with open(path, "w") as f:
        f.write('{"traceEvents":[\n')
        written = 0
        while written < TRACE_BYTES:
            if written:
                f.write(",\n")
            f.write(events)
            written += len(events)
        f.write("\n]}\n")
    yield path
    path.unlink()


def longest_gap_during(call) -> tuple[float, float, int]:
    """Runs `call` while a thread ticks every ~2 ms; returns (call seconds, longest gap between
    ticks within the call, ticks within the call)."""
    stamps: list[float] = []
    stop = threading.Event()

    def tick():
        while not stop.is_set():
            stamps.append(time.perf_counter())
            time.sleep(0.002)

    ticker = threading.Thread(target=tick)
    ticker.start()
    time.sleep(0.05)
    t0 = time.perf_counter()
    call()
    t1 = time.perf_counter()
    stop.set()
    ticker.join()
    inside = [t for t in stamps if t0 <= t <= t1]
    edges = [t0, *inside, t1]
    gap = max(b - a for a, b in zip(edges, edges[1:]))
    return t1 - t0, gap, len(inside)


def test_trace_summary_releases_the_gil(big_trace):
    seconds, gap, ticks = longest_gap_during(lambda: flinch_trace.trace_summary(big_trace))
    assert seconds > 0.15, f"the call took {seconds:.3f} s: too short to tell"
    assert gap < seconds / 2, f"no tick for {gap:.3f} s of a {seconds:.3f} s call ({ticks} ticks)"
    assert ticks >= 10, ticks


def test_analyze_releases_the_gil(tmp_path):
    rows = ["t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct"]
    rows.append("1000,0,MARK,begin,,")
    rows.extend(f"{1000 + 10 * k},0,SAMPLE,,{100 + k % 50}.5,{k % 100}" for k in range(1, 2_000_000))
    rows.append("30000000,0,MARK,end,,")
    csv = tmp_path / "big.csv"
    csv.write_text("\n".join(rows) + "\n")
    seconds, gap, ticks = longest_gap_during(lambda: flinch_trace.analyze(csv, "begin", "end"))
    assert seconds > 0.1, f"the call took {seconds:.3f} s: too short to tell"
    assert gap < seconds / 2, f"no tick for {gap:.3f} s of a {seconds:.3f} s call ({ticks} ticks)"
