"""`trace_summary(..., mergeable=True)` and `merge` give the command line's JSON."""

from __future__ import annotations

import json

import flinch_trace
import pytest

from conftest import bundled_traces, cli_json, run_cli

#: The HTA rank traces and a few others: real traces from several producers.
TRACES = [p for p in bundled_traces() if p.parent.name == "HolisticTraceAnalysis"][:5]


def test_mergeable_summary_is_the_cli_one(cli):
    assert len(TRACES) == 5
    for p in TRACES:
        got = flinch_trace.trace_summary(p, mergeable=True)
        assert got == cli_json(cli, "trace", str(p), "--json", "--mergeable"), p
        assert "mergeable" in got
        # The rest is the plain summary.
        plain = dict(got)
        del plain["mergeable"]
        assert plain == flinch_trace.trace_summary(p)


def test_merge_is_cli_merge(cli, tmp_path):
    files = []
    for k, p in enumerate(TRACES):
        f = tmp_path / f"s{k}.json"
        f.write_text(run_cli(cli, "trace", str(p), "--json", "--mergeable").stdout)
        files.append(f)
    want = cli_json(cli, "merge", *map(str, files), "--json")
    summaries = [json.loads(f.read_text()) for f in files]
    assert flinch_trace.merge(summaries) == want
    # JSON texts and bytes as well as dicts.
    texts = [f.read_text() for f in files]
    assert flinch_trace.merge([texts[0], texts[1].encode(), *summaries[2:]]) == want
    # --top
    want3 = cli_json(cli, "merge", *map(str, files), "--json", "--top", "3")
    assert flinch_trace.merge(summaries, top=3) == want3
    # A merge merges again, as the CLI's does.
    part = tmp_path / "part.json"
    part.write_text(run_cli(cli, "merge", *map(str, files[:2]), "--json").stdout)
    again = cli_json(cli, "merge", str(part), *map(str, files[2:]), "--json")
    assert flinch_trace.merge([flinch_trace.merge(summaries[:2]), *summaries[2:]]) == again


def test_merge_of_a_plain_summary_names_it():
    plain = flinch_trace.trace_summary(TRACES[0])
    good = flinch_trace.trace_summary(TRACES[1], mergeable=True)
    with pytest.raises(ValueError, match=r"^flinch-trace merge: summary 1"):
        flinch_trace.merge([good, plain])
    broken = json.loads(json.dumps(good))
    broken["mergeable"]["ops"] = "x"
    with pytest.raises(ValueError, match=r"summary 0: mergeable"):
        flinch_trace.merge([broken])


def test_merge_json_is_the_cli_text_byte_for_byte(cli, tmp_path):
    files = []
    for k, p in enumerate(TRACES):
        f = tmp_path / f"s{k}.json"
        f.write_text(flinch_trace.trace_summary_json(p, mergeable=True))
        files.append(f)
    want = run_cli(cli, "merge", *map(str, files), "--json").stdout
    assert flinch_trace.merge_json([f.read_text() for f in files]) + "\n" == want
