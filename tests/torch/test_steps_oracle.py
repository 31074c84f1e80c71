# SPDX-License-Identifier: Apache-2.0
"""The step oracle on tiny hand-made traces whose truth is worked out by hand in the comments.

Runs with pytest: `python3 -m pytest tests/torch` (the plain system python with pytest, or target/py-env).
"""
import gzip
import json
import os
import re
import sys
from decimal import Decimal

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import steps_oracle as so  # noqa: E402


def X(name, cat, ts, dur, **kw):
    return dict(ph="X", name=name, cat=cat, ts=ts, dur=dur, pid=1, tid=1, **kw)


def write(tmp_path, events, name="t.json", gz=False, bare=False):
    doc = events if bare else {"traceEvents": events}
    # A Decimal is written as its own number text (json has no such hook: a marked string, then unquoted).
    text = json.dumps(doc, default=lambda d: f"@dec@{d}@")
    data = re.sub(r'"@dec@([^@]*)@"', r"\1", text).encode()
    p = tmp_path / name
    p.write_bytes(gzip.compress(data) if gz else data)
    return str(p)


def run(tmp_path, events, **kw):
    step_name = kw.pop("step_name", so.DEFAULT_STEP_NAME)
    return so.oracle(write(tmp_path, events, **kw), step_name)


def test_to_ns_exact_from_text():
    assert so.to_ns(Decimal("1712195495406752.8")) == 1712195495406752800
    assert so.to_ns(Decimal("0.0005")) == 0  # half-even: 0.5 ns -> 0
    assert so.to_ns(Decimal("0.0015")) == 2  # 1.5 ns -> 2
    assert so.to_ns(Decimal("1e3")) == 1_000_000
    assert so.to_ns(12) == 12_000
    assert so.to_ns("3.25") == 3250
    assert so.to_ns(True) is None and so.to_ns(None) is None and so.to_ns("x") is None
    assert so.to_ns(Decimal("NaN")) is None


def test_us_text_as_nsdecimal():
    assert so.ns_to_us_text(1712195495505582988) == "1712195495505582.988"
    assert so.ns_to_us_text(1700000500) == "1700000.5"
    assert so.ns_to_us_text(12000) == "12.0"
    assert so.ns_to_us_text(10) == "0.01"
    assert so.ns_to_us_text(-1500) == "-1.5"


def test_glob():
    assert so.glob_match("train_step", "train_step")
    assert not so.glob_match("train_step", "train_step2")
    assert so.glob_match("forward*", "forward")
    assert so.glob_match("forward*", "forward_pass")
    assert not so.glob_match("forward*", "xforward")
    assert so.glob_match("*step*", "my_step_3")
    assert so.glob_match("a*b*c", "abc") and so.glob_match("a*b*c", "aXbYc")
    assert not so.glob_match("a*b*c", "acb")
    assert not so.glob_match("ab*ba", "aba")  # the pieces may not overlap


def test_priority_and_exact_sum(tmp_path):
    # Step [100, 200) µs. Inside it:
    #   cpu_op          [100, 190)   (cpu_exec everywhere nothing better is active)
    #   cuda_runtime    [110, 130)
    #   kernel          [120, 140)   beats runtime on [120,130)
    #   gpu_memcpy      [135, 150)   under the kernel on [135,140)
    #   gpu_memset      [150, 155)
    #   ncclDevKernel_  [150, 170)   memset wins [150,155), then communication [155,170)
    #   enumerate(DataLoader) cpu_op [175, 185): dataloader beats the cpu_op
    #   nothing         [190, 200)   other
    # kernel 20, memcpy 10, memset 5, communication 15, runtime 10 ([110,120)),
    # dataloader 10, cpu_exec 100-20-10-5-15-10-10 - 10(other) = 20: [100,110) + [170,175) + [185,190).
    ev = [
        X("ProfilerStep#3", "user_annotation", 100, 100),
        X("aten::mm", "cpu_op", 100, 90),
        X("cudaLaunchKernel", "cuda_runtime", 110, 20),
        X("sgemm", "kernel", 120, 20),
        X("Memcpy HtoD", "gpu_memcpy", 135, 15),
        X("Memset", "gpu_memset", 150, 5),
        X("ncclDevKernel_AllReduce_Sum_f32", "kernel", 150, 20),
        X("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "cpu_op", 175, 10),
        X("ProfilerStep#3", "gpu_user_annotation", 100, 100),  # no class, and not a step
        X("fn", "python_function", 100, 100),  # no class
    ]
    out = run(tmp_path, ev)
    (s,) = out["steps"]
    assert s["name"] == "ProfilerStep#3" and s["index"] == 3
    assert s["start_ts_us"] == "100.0" and s["duration_ns"] == 100_000
    assert s["breakdown_ns"] == {"kernel": 20_000, "memcpy": 10_000, "memset": 5_000, "communication": 15_000,
                                 "runtime": 10_000, "dataloader": 10_000, "cpu_exec": 20_000, "other": 10_000}
    assert s["breakdown_ms"]["kernel"] == 0.02
    assert s["outlier"] is False


def test_old_nccl_name_and_driver(tmp_path):
    # [0, 10): ncclKernel_ [0,4) communication, cuda_driver [4,7) runtime, rest other.
    ev = [X("ProfilerStep#0", "user_annotation", 0, 10), X("ncclKernel_AllGather", "kernel", 0, 4),
          X("cuMemAlloc", "cuda_driver", 4, 3)]
    (s,) = run(tmp_path, ev)["steps"]
    assert s["breakdown_ns"]["communication"] == 4000
    assert s["breakdown_ns"]["runtime"] == 3000
    assert s["breakdown_ns"]["other"] == 3000


def test_clipping_nested_steps_and_sub_us(tmp_path):
    # Step A [10.0005, 20.0015) µs -> ns [10000 (half-even of 10000.5), 10000 + 10001 (10001.0) = 20001).
    # dur text 10.001 -> 10001 ns. cpu_op [5, 15) clipped to [10000, 15000): 5000 ns cpu_exec; other 5001.
    # Step B nested in A, [12, 13): its own window, the cpu_op covers it whole.
    ev = [X("ProfilerStep#1", "user_annotation", Decimal("10.0005"), Decimal("10.001")),
          X("ProfilerStep#2", "user_annotation", 12, 1), X("op", "cpu_op", 5, 10)]
    a, b = run(tmp_path, ev)["steps"]
    assert (a["start_ns"], a["duration_ns"]) == (10000, 10001)
    assert a["breakdown_ns"]["cpu_exec"] == 5000 and a["breakdown_ns"]["other"] == 5001
    assert b["breakdown_ns"]["cpu_exec"] == 1000 and b["duration_ns"] == 1000


def test_order_and_index(tmp_path):
    # File order #10, #2, #9; time order #2 (ts 0), #9 (ts 5), #10 (ts 5): a tie broken by index.
    ev = [X("ProfilerStep#10", "user_annotation", 5, 1), X("ProfilerStep#2", "user_annotation", 0, 1),
          X("ProfilerStep#9", "user_annotation", 5, 2)]
    out = run(tmp_path, ev)
    assert [s["index"] for s in out["steps"]] == [2, 9, 10]


def test_step_name_ordinal_and_category(tmp_path):
    # `train_step` has no '#': its index is the ordinal in time order. A cpu_op of the same name is no step,
    # nor is a user_annotation of another name, nor a B event.
    ev = [X("train_step", "user_annotation", 30, 5), X("train_step", "user_annotation", 10, 5),
          X("train_step", "cpu_op", 0, 5), X("eval_step", "user_annotation", 0, 5),
          dict(ph="B", name="train_step", cat="user_annotation", ts=50, pid=1, tid=1)]
    out = run(tmp_path, ev, step_name="train_step")
    assert [(s["index"], s["start_ns"]) for s in out["steps"]] == [(0, 10000), (1, 30000)]
    out = run(tmp_path, ev, step_name="*_step")
    assert [s["name"] for s in out["steps"]] == ["eval_step", "train_step", "train_step"]
    # The default pattern needs an integer after '#'.
    assert run(tmp_path, ev + [X("ProfilerStep#x", "user_annotation", 0, 1)])["steps"] == []


def test_outliers_mad_rule(tmp_path):
    # Durations (ms) 10, 10, 11, 12, 40, 9: sorted 9 10 10 11 12 40; m = (10 + 11) / 2 = 10.5.
    # |d - m|: 0.5 0.5 0.5 1.5 1.5 29.5 -> sorted 0.5 0.5 0.5 1.5 1.5 29.5, MAD = (0.5 + 1.5) / 2 = 1.0.
    # threshold = max(3 * 1.4826 * 1.0 = 4.4478, 1.05) = 4.4478 ms: only 40 (29.5 > 4.4478); 12 is 1.5.
    # Step 40 has [0, 30 ms) in a DataLoader op, the others none: dataloader median 0, excess 30 ms; other's
    # excess: 40-30=10 minus median other 10.5 = -0.5. Largest part dataloader, +30 ms.
    durs_ms = [10, 10, 11, 12, 40, 9]
    ev, t = [], 0
    for i, d in enumerate(durs_ms):
        ev.append(X(f"ProfilerStep#{i}", "user_annotation", t, d * 1000))
        if d == 40:
            ev.append(X("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "cpu_op", t, 30_000))
        t += d * 1000
    out = run(tmp_path, ev)
    assert [s["outlier"] for s in out["steps"]] == [False, False, False, False, True, False]
    summ = out["step_summary"]
    assert summ["median_ms"] == 10.5 and summ["mad_ms"] == 1.0
    assert summ["threshold_ms"] == pytest.approx(4.4478, abs=1e-12)
    (o,) = summ["outliers"]
    assert (o["index"], o["largest_part"], o["largest_part_excess_ms"]) == (4, "dataloader", 30.0)


def test_outliers_ten_percent_floor(tmp_path):
    # All equal but one: 100 x4 and 109, 111 -> sorted 100 100 100 100 109 111, m = 100, MAD = 0.
    # threshold = max(0, 10) = 10 ms: 111 is an outlier (11 > 10), 109 is not. A step exactly at
    # the threshold (110) is not (strict '>').
    for durs, flags in (([100, 100, 109, 100, 111, 100], [0, 0, 0, 0, 1, 0]),
                        ([100, 100, 110, 100, 100], [0, 0, 0, 0, 0])):
        ev, t = [], 0
        for i, d in enumerate(durs):
            ev.append(X(f"ProfilerStep#{i}", "user_annotation", t, d * 1000))
            t += d * 1000
        out = run(tmp_path, ev)
        assert [int(s["outlier"]) for s in out["steps"]] == flags
    # The slow step has nothing profiled: its excess is all `other`.
    assert out["step_summary"]["outliers"] == []
    ev.append(X("ProfilerStep#9", "user_annotation", t, 300_000))
    (o,) = run(tmp_path, ev)["step_summary"]["outliers"]
    assert (o["index"], o["largest_part"], o["largest_part_excess_ms"]) == (9, "other", 200.0)


def test_gzip_bare_array_and_no_steps(tmp_path):
    ev = [X("ProfilerStep#1", "user_annotation", "5", "2.5")]
    (s,) = so.oracle(write(tmp_path, ev, name="a.json.gz", gz=True, bare=True))["steps"]
    assert (s["start_ns"], s["duration_ns"], s["breakdown_ns"]["other"]) == (5000, 2500, 2500)
    out = run(tmp_path, [X("op", "cpu_op", 0, 1)])
    assert out["steps"] == [] and out["step_summary"]["n"] == 0


def test_skips_unusable_events(tmp_path):
    # A negative dur, a bool ts, a missing dur: none of them counts, as step or as class.
    ev = [X("ProfilerStep#1", "user_annotation", 0, 10), X("op", "cpu_op", 0, -1), X("op", "cpu_op", True, 5),
          dict(ph="X", name="op", cat="cpu_op", ts=0, pid=1, tid=1), X("ProfilerStep#2", "user_annotation", 0, -1)]
    (s,) = run(tmp_path, ev)["steps"]
    assert s["breakdown_ns"]["other"] == 10_000


def test_cli_main(tmp_path, capsys):
    p = write(tmp_path, [X("ProfilerStep#7", "user_annotation", 1, 1)])
    so.main([p])
    out = json.loads(capsys.readouterr().out)
    assert out["steps"][0]["index"] == 7 and out["steps"][0]["start_ts_us"] == "1.0"


def test_dataloader_as_user_annotation(tmp_path):
    # Real PyTorch writes the DataLoader's __next__ as a user_annotation (tests/fixtures/torch/README.md).
    # Step [0, 100): DataLoader user_annotation [0, 60) with a cpu_op [10, 20) inside (still dataloader),
    # a cpu_op [70, 80) (cpu_exec), another user_annotation [80, 100) (no class: other).
    ev = [X("ProfilerStep#4", "user_annotation", 0, 100),
          X("enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", "user_annotation", 0, 60),
          X("aten::stack", "cpu_op", 10, 10), X("aten::mm", "cpu_op", 70, 10),
          X("Optimizer.step#SGD.step", "user_annotation", 80, 20),
          X("enumerate(DataLoader)#x", "python_function", 60, 10)]  # other categories: no class
    (s,) = run(tmp_path, ev)["steps"]
    assert {k: v for k, v in s["breakdown_ns"].items() if v} == {"dataloader": 60_000, "cpu_exec": 10_000,
                                                                  "other": 30_000}
