#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""`with flinch_trace.profile(DIR) as p:` around a real CPU training loop (tests/torch/record_profile.sh):
the recorder child, the profiler armed on the first optimizer step, marks in the block, and p.result,
the joined dict (`trace TRACE --telemetry CSV --json`), after it.

Usage: profile_api.py DIR   (flinch_trace importable; the binary at $FLINCH_TRACE_BIN)
"""
import os
import sys
import warnings

warnings.filterwarnings("ignore", message="Failed to initialize NumPy")
import torch  # noqa: E402

import flinch_trace  # noqa: E402


def main(folder):
    torch.manual_seed(0)
    model = torch.nn.Linear(64, 8)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    x, y = torch.randn(32, 64), torch.randn(32, 8)
    with flinch_trace.profile(folder, (1, 1, 4)) as p:
        with flinch_trace.window("train"):
            for _ in range(9):
                loss = torch.nn.functional.mse_loss(model(x), y)
                opt.zero_grad()
                loss.backward()
                opt.step()
    r = p.result
    assert p.traces == [os.path.join(os.path.abspath(folder), "trace.torch.json.gz")], p.traces
    assert r is not None and r["alignment"]["source"] == "baseTimeNanoseconds", r.get("alignment")
    # One row per step, or (where annotation_energy folds names differing by a trailing #N) one row
    # for all: 4 ProfilerSteps either way (schedule 1,1,4: #2..#5).
    rows = [a for a in r["annotation_energy"] if a["name"].startswith("ProfilerStep#")]
    assert sum(a["n"] for a in rows) == 4, rows
    steps = [a["name"] for a in rows]
    assert os.path.isfile(p.perfetto), p.perfetto
    csv = open(p.csv).read()
    assert ",MARK,train_start" in csv and ",MARK,train_end" in csv, "the block's marks are recorded"
    assert "FLINCH_MARKS" not in os.environ
    # Outside a block: no profiler is armed (a second block may run).
    from flinch_trace import _torch_profile

    assert _torch_profile._session is None
    print("profile_api: %s; steps %s; marks recorded" % (p.traces[0], ", ".join(steps)))


if __name__ == "__main__":
    main(sys.argv[1])
