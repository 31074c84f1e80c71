# SPDX-License-Identifier: Apache-2.0
"""check_steps.py, run.sh's comparisons: they pass on what they should and catch each kind of difference.

`compare` is fed the oracle's own steps on a fixture written the way flinch-trace writes them
(`start_ts_us` a JSON number with its exact decimals), then with one thing changed at a time.
"""
import copy
import json
import os
import subprocess
import sys
from decimal import Decimal

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "fixtures", "torch")
CHECK = os.path.join(HERE, "check_steps.py")


def flinch_like(oracle):
    """The oracle's steps as flinch-trace would print them: start_ts_us as a bare number, no *_ns fields."""
    steps = []
    for s in oracle["steps"]:
        steps.append({"name": s["name"], "index": s["index"], "start_ts_us": "@ts@" + s["start_ts_us"],
                      "duration_ms": s["duration_ms"], "breakdown_ms": s["breakdown_ms"], "outlier": s["outlier"]})
    outliers = [{"index": o["index"], "largest_part": o["largest_part"]} for o in oracle["step_summary"]["outliers"]]
    text = json.dumps({"steps": steps, "step_summary": {"outliers": outliers}})
    return text.replace('"@ts@', "").replace('", "duration_ms"', ', "duration_ms"')


def check(*args):
    return subprocess.run([sys.executable, CHECK, *args], capture_output=True, text=True)


@pytest.fixture
def golden():
    with open(os.path.join(FIX, "steps_cpu.steps.json")) as f:
        return json.load(f)


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_compare_equal(tmp_path, golden):
    text = flinch_like(golden)
    assert f'"start_ts_us": {golden["steps"][0]["start_ts_us"]}, "duration_ms"' in text  # a number, not a string
    r = check("compare", write(tmp_path, "f.json", text), os.path.join(FIX, "steps_cpu.steps.json"))
    assert r.returncode == 0, r.stderr
    assert "22 steps equal the oracle" in r.stdout


@pytest.mark.parametrize("change, message", [
    (lambda g: g["steps"][3].update(start_ts_us=str(Decimal(g["steps"][3]["start_ts_us"]) + Decimal("0.001"))),
     "start_ts_us"),  # 1 ns later
    (lambda g: g["steps"][0]["breakdown_ms"].update(other=g["steps"][0]["breakdown_ms"]["other"] + 1e-8), "other"),
    (lambda g: g["steps"][1].update(duration_ms=g["steps"][1]["duration_ms"] + 1e-8), "duration_ms"),
    (lambda g: g["steps"][2].update(outlier=True), "outlier"),
    (lambda g: g["steps"][2].update(index=99), "name/index"),
    (lambda g: g["steps"].pop(), "steps, the oracle has"),
    (lambda g: g["steps"][5]["breakdown_ms"].pop("memset"), "breakdown parts"),
    (lambda g: g["step_summary"]["outliers"][0].update(largest_part="cpu_exec"), "largest_part"),
])
def test_compare_catches(tmp_path, golden, change, message):
    g = copy.deepcopy(golden)
    change(g)
    r = check("compare", write(tmp_path, "f.json", flinch_like(g)), os.path.join(FIX, "steps_cpu.steps.json"))
    assert r.returncode == 1
    assert message in r.stderr


def test_truth(tmp_path, golden):
    truth = os.path.join(FIX, "steps_cpu.truth.json")
    steps = os.path.join(FIX, "steps_cpu.steps.json")
    assert check("truth", steps, truth).returncode == 0
    # An extra outlier alone: exit 3 (run.sh records again).
    g = copy.deepcopy(golden)
    g["step_summary"]["outliers"].append({"name": "ProfilerStep#9", "index": 9, "duration_ms": 30.0,
                                          "largest_part": "cpu_exec", "largest_part_excess_ms": 20.0})
    r = check("truth", write(tmp_path, "extra.json", json.dumps(g)), truth)
    assert r.returncode == 3 and "extra outliers" in r.stderr
    # A stall step not found, or with the wrong largest part: exit 1.
    g = copy.deepcopy(golden)
    g["step_summary"]["outliers"] = [o for o in g["step_summary"]["outliers"] if o["index"] != 8]
    r = check("truth", write(tmp_path, "missing.json", json.dumps(g)), truth)
    assert r.returncode == 1 and "[8] should be outliers" in r.stderr
    g = copy.deepcopy(golden)
    next(o for o in g["step_summary"]["outliers"] if o["index"] == 16)["largest_part"] = "other"
    r = check("truth", write(tmp_path, "wrong.json", json.dumps(g)), truth)
    assert r.returncode == 1 and "step 16: largest part other" in r.stderr


def test_fixture_goldens_are_the_oracles():
    # The committed goldens are what the oracle computes on the committed traces today.
    sys.path.insert(0, HERE)
    import steps_oracle

    for name in ("steps_cpu", "steps_cpu_stack"):
        with open(os.path.join(FIX, name + ".steps.json")) as f:
            want = json.load(f)
        assert steps_oracle.oracle(os.path.join(FIX, name + ".json.gz")) == want
