"""`diff` gives the command line's `diff --json`, on the bundled traces and their summaries."""

from __future__ import annotations

import json

import flinch_trace
import pytest

from conftest import REPO, bundled_traces, cli_json, run_cli

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


#: The real PyTorch pair: B's data loader stalled in known steps (tests/fixtures/torch/README.md).
TORCH = REPO / "tests" / "fixtures" / "torch"


def test_steps_are_the_cli_diff_steps(cli):
    a, b = TORCH / "diff_a.json.gz", TORCH / "diff_b_stall.json.gz"
    got = flinch_trace.diff(a, b, steps=True)
    assert got == cli_json(cli, "diff", str(a), str(b), "--json", "--steps")
    truth = json.loads((TORCH / "diff_b_stall.truth.json").read_text())
    part = got["steps"]["parts"][0]
    assert (part["part"], part["moved_in"]) == ("dataloader", "b")
    assert part["moved_steps"] == truth["stall_steps"]
    assert isinstance(got["steps"]["significant"], bool)
    assert len(got["steps"]["ci95_pct"]) == 2
    # A pattern implies the steps, as --step-name.
    got = flinch_trace.diff(a, b, step_name="ProfilerStep#*")
    assert got == cli_json(cli, "diff", str(a), str(b), "--json", "--step-name", "ProfilerStep#*")
    assert got["steps"]["pattern"] == "ProfilerStep#*"
    # Without steps: no steps key, as the CLI without --steps.
    plain = flinch_trace.diff(a, b)
    assert "steps" not in plain
    assert plain == cli_json(cli, "diff", str(a), str(b), "--json")
    with pytest.raises(ValueError, match="step-name"):
        flinch_trace.diff(a, b, step_name="")


def test_a_summary_has_no_steps(cli, tmp_path):
    a = TORCH / "diff_a.json.gz"
    s = tmp_path / "s.json"
    s.write_text(run_cli(cli, "trace", str(a), "--json", "--mergeable").stdout)
    got = flinch_trace.diff(a, s, steps=True)
    assert got == cli_json(cli, "diff", str(a), str(s), "--json", "--steps")
    assert got["steps"] is None
    assert any(w.startswith("b: a summary has no steps") for w in got["warnings"])
