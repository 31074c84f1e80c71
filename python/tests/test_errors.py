"""Bad input raises the command line's message as ValueError; paths that cannot be read, OSError."""

from __future__ import annotations

import flinch_trace
import pytest

from conftest import REPO, run_cli


def test_bad_json_raises_value_error_with_the_cli_message_and_offset(cli, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"traceEvents": [{"ph": "X", "ts": 1, "dur": 2}, {"ph": "X", "ts": ]}')
    done = run_cli(cli, "trace", str(bad), "--json", check=False)
    assert done.returncode == 1
    with pytest.raises(ValueError) as e:
        flinch_trace.trace_summary(bad)
    assert str(e.value) == done.stderr.strip()
    assert "byte" in str(e.value)


def test_cut_gzip_is_summarized_with_a_warning_as_in_the_cli(cli, tmp_path):
    src = REPO / "tests/traces/HolisticTraceAnalysis/mtia_inference_rank_0.json.gz"
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(src.read_bytes()[:100_000])
    done = run_cli(cli, "trace", str(cut), "--json", check=False)
    got = flinch_trace.trace_summary(cut)
    import json

    assert got == json.loads(done.stdout)
    assert got["truncated"] is True


def test_missing_file_raises_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        flinch_trace.trace_summary(tmp_path / "nope.json")
    assert e.value.filename == str(tmp_path / "nope.json")
    with pytest.raises(FileNotFoundError):
        flinch_trace.analyze(tmp_path / "nope.csv", "a", "b")
    with pytest.raises(FileNotFoundError):
        flinch_trace.summarize(tmp_path / "nope")


def test_wrong_kind_of_path_raises_os_error(tmp_path):
    with pytest.raises(IsADirectoryError):
        flinch_trace.trace_summary(tmp_path)
    f = tmp_path / "f"
    f.write_text("x")
    with pytest.raises(NotADirectoryError):
        flinch_trace.summarize(f)


def test_bad_options_raise_value_error():
    path = REPO / "tests/traces/catapult/big_trace.json"
    with pytest.raises(ValueError, match="exactness"):
        flinch_trace.trace_summary(path, exactness="roughly")
    csv = REPO / "tests/analyze/pause.csv"
    with pytest.raises(ValueError, match="power_source"):
        flinch_trace.analyze(csv, "begin", "end", power_source="guess")
    with pytest.raises(ValueError, match="occurrence"):
        flinch_trace.analyze(csv, "begin", "end", occurrence=0)
    with pytest.raises(OverflowError):
        flinch_trace.trace_summary(path, top=-1)


def test_one_mark_only_is_the_cli_usage_message(cli):
    csv = REPO / "tests/analyze/pause.csv"
    done = run_cli(cli, "analyze", "--csv", str(csv), "--start", "begin", "--json", check=False)
    assert done.returncode == 2
    with pytest.raises(ValueError) as e:
        flinch_trace.analyze(csv, "begin")
    assert str(e.value) == done.stderr.strip()


def test_gpu_absent_is_the_cli_message(cli):
    csv = REPO / "tests/analyze/pause.csv"
    done = run_cli(
        cli, "analyze", "--csv", str(csv), "--start", "begin", "--end", "end", "--gpu", "7",
        "--json", check=False,
    )
    assert done.returncode == 1
    with pytest.raises(ValueError) as e:
        flinch_trace.analyze(csv, "begin", "end", gpu=7)
    assert str(e.value) == done.stderr.strip()


def test_csv_garbage_is_analyzed_as_the_cli_does(cli, tmp_path):
    csv = tmp_path / "garbage.csv"
    csv.write_bytes(b"\x00\xff not a csv\n\"unclosed,\n")
    done = run_cli(cli, "analyze", "--csv", str(csv), "--json", check=False)
    import json

    if done.returncode == 0:
        assert flinch_trace.analyze(csv) == json.loads(done.stdout)
    else:
        with pytest.raises(ValueError) as e:
            flinch_trace.analyze(csv)
        assert str(e.value) == done.stderr.strip().splitlines()[-1]
