"""The wheel's functions give the command line's JSON, on the bundled real traces and recordings."""

from __future__ import annotations

import json
from pathlib import Path

import flinch_trace
import pytest

from conftest import REPO, bundled_traces, cli_json, run_cli

TRACES = bundled_traces()


def test_there_are_traces_to_compare():
    assert len(TRACES) >= 20, TRACES


@pytest.mark.parametrize("path", TRACES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_trace_summary_is_trace_json(cli, path):
    assert flinch_trace.trace_summary(path) == cli_json(cli, "trace", str(path), "--json")


@pytest.mark.parametrize(
    "exactness, flags", [("bounded", ["--bounded"]), ("exact", ["--exact"])]
)
def test_trace_summary_options(cli, exactness, flags):
    path = REPO / "tests/traces/HolisticTraceAnalysis/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
    got = flinch_trace.trace_summary(str(path), top=3, exactness=exactness)
    assert got == cli_json(cli, "trace", str(path), "--json", "--top", "3", *flags)
    assert len(got["largest_ops_by_duration_sum"]) == 3


def analyze_cases():
    """(name, csv, start, end) of tests/analyze/cases.txt."""
    cases = []
    for line in (REPO / "tests/analyze/cases.txt").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        name, csv, args = line.split("|")
        words = args.split()
        if words[0::2] != ["--start", "--end"]:
            continue
        cases.append((name, REPO / "tests/analyze" / csv, words[1], words[3]))
    return cases


CASES = analyze_cases()


def test_there_are_analyze_cases():
    assert len(CASES) >= 10, CASES


@pytest.mark.parametrize("name, csv, start, end", CASES, ids=[c[0] for c in CASES])
def test_analyze_is_analyze_json(cli, name, csv, start, end):
    done = run_cli(
        cli, "analyze", "--csv", str(csv), "--start", start, "--end", end, "--json", check=False
    )
    if done.returncode == 0:
        assert flinch_trace.analyze(csv, start, end) == json.loads(done.stdout)
    else:
        # A missing or misplaced mark: the CLI prints the JSON, then the message, exit 1.
        assert done.returncode == 1, done.stderr
        with pytest.raises(ValueError) as e:
            flinch_trace.analyze(csv, start, end)
        assert str(e.value) == done.stderr.strip().splitlines()[-1]


@pytest.mark.parametrize(
    "csv", sorted((REPO / "tests/analyze").glob("*.csv")), ids=lambda p: p.name
)
def test_analyze_recording_level_is_analyze_json(cli, csv):
    want = cli_json(cli, "analyze", "--csv", str(csv), "--json", "--spans")
    assert flinch_trace.analyze(csv, spans=True) == want


def test_analyze_options(cli):
    csv = REPO / "tests/analyze/multi_gpu.csv"
    args = ["--start", "run_start", "--end", "run_end", "--gpu", "1", "--max-gap-ms", "20",
            "--power-source", "instant", "--occurrence", "1"]
    want = cli_json(cli, "analyze", "--csv", str(csv), *args, "--json")
    got = flinch_trace.analyze(
        csv, "run_start", "run_end", gpu=1, max_gap_ms=20, power_source="instant"
    )
    assert got == want


@pytest.mark.parametrize(
    "case",
    sorted(p.name for p in (REPO / "tests/summarize/cases").iterdir() if p.is_dir()),
)
def test_summarize_is_summarize_out(cli, tmp_path, case):
    runs = REPO / "tests/summarize/cases" / case
    out = tmp_path / "out.json"
    run_cli(cli, "summarize", "--runs", str(runs), "--out", str(out))
    assert flinch_trace.summarize(runs) == json.loads(out.read_text())
    out2 = tmp_path / "skip.json"
    run_cli(cli, "summarize", "--runs", str(runs), "--out", str(out2), "--skip-traces")
    assert flinch_trace.summarize(str(runs), skip_traces=True) == json.loads(out2.read_text())


def test_version_is_the_crate_version():
    cargo = (REPO / "Cargo.toml").read_text()
    assert f'version = "{flinch_trace.__version__}"' in cargo


@pytest.mark.parametrize("path", TRACES[:8], ids=lambda p: p.name)
def test_trace_summary_json_is_the_cli_text_byte_for_byte(cli, path):
    for flags, kwargs in [([], {}), (["--mergeable"], {"mergeable": True})]:
        want = run_cli(cli, "trace", str(path), "--json", *flags).stdout
        assert flinch_trace.trace_summary_json(path, **kwargs) + "\n" == want
