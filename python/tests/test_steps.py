"""``flinch_trace.steps`` gives ``trace FILE [--telemetry CSV] --steps --json``, on the bundled real
traces and on a generated GPU trace with a recording; its ``steps`` list loads into pandas."""

from __future__ import annotations

import json
import warnings

import flinch_trace
import pytest

from conftest import bundled_traces, cli_json, run_cli

TRACES = bundled_traces()
BASE = 1_764_000_000_000_000_000


def write_run(tmp_path):
    """A trace of 10 steps (one slow, with a GPU pause) and its recording: power every 10 ms,
    the energy counter moving every 100 ms."""
    events, t = [], 1_000_000.0  # µs
    for k in range(10):
        length = 900_000.0 if k == 4 else 300_000.0
        events.append(dict(ph="X", cat="user_annotation", name=f"ProfilerStep#{k}", pid=1, tid=1,
                           ts=t, dur=length))
        busy = length - 600_000.0 if k == 4 else length
        events.append(dict(ph="X", cat="kernel", name="gemm", pid=0, tid=7, ts=t, dur=busy))
        events.append(dict(ph="X", cat="cpu_op", name="aten::mm", pid=1, tid=1, ts=t + 1, dur=50.5))
        t += length + 1000.0
    trace = tmp_path / "run.json"
    trace.write_text(json.dumps({"baseTimeNanoseconds": BASE, "traceEvents": events}))
    rows = ["t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_mem_util_pct,"
            "gpu_sm_clock_MHz,gpu_temp_C,rapl_energy_uj,gpu_index,gpu_energy_mJ"]
    for k in range(450):
        wall = BASE + 900_000_000 + k * 10_000_000
        rows.append(f"{wall},{wall},SAMPLE,,{100 + (k * 37) % 200},50,,,,,0,{(k // 10) * 25000}")
    csv = tmp_path / "trace.csv"
    csv.write_text("\n".join(rows) + "\n")
    return trace, csv


@pytest.mark.parametrize("path", TRACES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_steps_is_trace_steps_json(cli, path):
    got = flinch_trace.steps(path)
    assert got == cli_json(cli, "trace", str(path), "--steps", "--json")
    assert got["step_summary"]["n"] == len(got["steps"])


def test_the_bundled_traces_have_steps():
    with_steps = [p for p in TRACES if flinch_trace.steps(p)["steps"]]
    assert len(with_steps) >= 3, with_steps


def test_steps_with_telemetry_and_a_pattern(cli, tmp_path):
    trace, csv = write_run(tmp_path)
    got = flinch_trace.steps(trace, telemetry=csv)
    assert got == cli_json(cli, "trace", str(trace), "--telemetry", str(csv), "--steps", "--json")
    assert [o["index"] for o in got["step_summary"]["outliers"]] == [4]
    assert got["step_summary"]["outliers"][0]["largest_part"] == "other"
    assert all(s["gpu_energy_j"] > 0 and s["resolvable"] for s in got["steps"])
    assert got["step_summary"]["update_periods"][0]["update_period_ms"] == 100.0
    named = flinch_trace.steps(str(trace), step_name="ProfilerStep#1*")
    assert named == cli_json(cli, "trace", str(trace), "--steps", "--step-name", "ProfilerStep#1*",
                             "--json")
    assert [s["name"] for s in named["steps"]] == ["ProfilerStep#1"]
    none = flinch_trace.steps(trace, step_name="train_step")
    assert none["steps"] == [] and "no steps" in none["step_summary"]["note"]


def test_a_bad_pattern_is_a_value_error_as_the_cli_exits_2(cli, tmp_path):
    trace, _ = write_run(tmp_path)
    done = run_cli(cli, "trace", str(trace), "--steps", "--step-name", "", check=False)
    assert done.returncode == 2
    with pytest.raises(ValueError, match="empty pattern"):
        flinch_trace.steps(trace, step_name="")


def test_steps_load_into_pandas(tmp_path):
    try:
        import pandas
    except ImportError:
        warnings.warn("pandas is not installed: the DataFrame test is skipped")
        pytest.skip("pandas is not installed")
    trace, csv = write_run(tmp_path)
    frame = pandas.DataFrame(flinch_trace.steps(trace, telemetry=csv)["steps"])
    assert len(frame) == 10
    assert list(frame["index"]) == list(range(10))
    assert frame["outlier"].sum() == 1
    assert (frame["gpu_energy_j"] > 0).all()


def write_counters_run(tmp_path):
    """The run of ``write_run`` with its power written into the trace as PyTorch's profiler
    writes counters (pid ``"GPU 0 Counters"``, the value under ``""``, µs on the trace clock),
    and the same samples as a recording (``gpu_index`` 0, no energy counter)."""
    trace, _ = write_run(tmp_path)
    doc = json.loads(trace.read_text())
    rows = ["t_mono_ns,t_wall_ns,row_type,label,gpu_power_W,gpu_util_pct,gpu_index"]
    for k in range(450):
        ts_ns = 900_000_000 + k * 10_000_000
        power, util = 100 + (k * 37) % 200, 50
        doc["traceEvents"].append(dict(ph="C", name="Power (W)", pid="GPU 0 Counters", tid=0,
                                       ts=ts_ns / 1000, args={"": power}))
        doc["traceEvents"].append(dict(ph="C", name="SM Active (%)", pid="GPU 0 Counters", tid=0,
                                       ts=ts_ns / 1000, args={"": util}))
        rows.append(f"{BASE + ts_ns},{BASE + ts_ns},SAMPLE,,{power},{util},0")
    counters = tmp_path / "counters.json"
    counters.write_text(json.dumps(doc))
    csv = tmp_path / "same.csv"
    csv.write_text("\n".join(rows) + "\n")
    return counters, csv


def test_steps_alone_take_their_energy_from_the_traces_counters(cli, tmp_path):
    trace, csv = write_counters_run(tmp_path)
    got = flinch_trace.steps(trace)
    assert got == cli_json(cli, "trace", str(trace), "--steps", "--json")
    assert got["step_summary"]["power_source"] == "trace_counters"
    assert got["step_summary"]["trace_counters"]["devices"][0]["pid"] == "GPU 0 Counters"
    assert "pauses" not in got  # no join ran

    def energies(r):
        return [(s["gpu_energy_j"], s["energy_bound_j"], s["resolvable"], s["avg_power_w"],
                 s["verdict"]) for s in r["steps"]]

    # The same samples as a recording, and the join's own route, give the same energies.
    with_csv = flinch_trace.steps(trace, telemetry=csv)
    assert with_csv["step_summary"]["power_source"] == "telemetry"
    assert energies(got) == energies(with_csv)
    joined = cli_json(cli, "trace", str(trace), "--pauses", "--steps", "--json")
    assert energies(got) == energies(joined)
    assert len(got["steps"]) == 10 and all(s["gpu_energy_j"] > 0 for s in got["steps"])
