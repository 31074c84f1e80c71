"""`diff` gives the command line's `diff --json`, on the bundled traces and their summaries."""

from __future__ import annotations

import flinch_trace
import pytest

from conftest import bundled_traces, cli_json, run_cli

#: Real traces from several producers, compared in pairs (each with the next).
TRACES = [p for p in bundled_traces() if p.parent.name == "HolisticTraceAnalysis"][:4]


def test_there_are_pairs():
    assert len(TRACES) == 4, TRACES


@pytest.mark.parametrize("k", range(3))
def test_diff_is_the_cli_diff(cli, k):
    a, b = TRACES[k], TRACES[k + 1]
    got = flinch_trace.diff(a, b)
    assert got == cli_json(cli, "diff", str(a), str(b), "--json")
    assert got["a"]["kind"] == "trace" and got["b"]["kind"] == "trace"
    assert isinstance(got["verdict"], str)
    # Options as the flags.
    got = flinch_trace.diff(str(a), str(b), top=3, exactness="exact", threshold_pct=5, min_gap_ms=10)
    want = cli_json(
        cli, "diff", str(a), str(b), "--json", "--top", "3", "--exact",
        "--threshold-pct", "5", "--min-gap-ms", "10",
    )
    assert got == want
    assert len(got["ops"]) == 3


def test_a_trace_against_its_summary(cli, tmp_path):
    a = TRACES[0]
    s = tmp_path / "s.json"
    s.write_text(run_cli(cli, "trace", str(a), "--json", "--mergeable").stdout)
    got = flinch_trace.diff(a, s)
    assert got == cli_json(cli, "diff", str(a), str(s), "--json")
    assert got["b"]["kind"] == "summary"
    assert got["verdict"].startswith("B vs A: no significant change")
    assert all(o["delta_sum_ms"] == 0 for o in got["ops"])


def test_errors(tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("no trace here\n")
    with pytest.raises(ValueError, match="at byte 0"):
        flinch_trace.diff(TRACES[0], bad)
    with pytest.raises(FileNotFoundError):
        flinch_trace.diff(TRACES[0], tmp_path / "missing.json")
    with pytest.raises(ValueError, match="exactness"):
        flinch_trace.diff(TRACES[0], TRACES[1], exactness="approximately")
    with pytest.raises(ValueError, match="threshold_pct"):
        flinch_trace.diff(TRACES[0], TRACES[1], threshold_pct=101)
