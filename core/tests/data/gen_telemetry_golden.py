# SPDX-License-Identifier: Apache-2.0
"""Regenerates telemetry_golden.jsonl and telemetry_golden.expected.json.

Usage: python3 gen_telemetry_golden.py PATH/TO/reference OUTDIR
Writes a synthetic host telemetry file (gaps over 5 s, a step back in time, blank and
non-numeric GPU fields, rows with the wrong GPU field count, missing CPU readings) and the
reference `telemetry_summary` of it for the whole run and three windows. The reference is
needed only here; the Rust test reads the two files alone. Generated with Python 3.11, whose
float `sum()` adds left to right (3.12+ compensates, which can change the last bits).
"""

import json
import random
import sys
from pathlib import Path

sys.path.insert(0, sys.argv[1])
from summarize_host_telemetry import telemetry_summary  # noqa: E402

out = Path(sys.argv[2])
rng = random.Random(7)
t = 1_712_000_000.0 + rng.random()
rows = []
for i in range(600):
    t += rng.choice([1.0, 1.0, 0.98, 1.02, 1.5]) if i % 97 else 7.25
    if i == 300:
        t -= 2.5
    fields = [
        "0",
        "NVIDIA H100",
        f"{rng.randrange(1000, 80000)}",
        "P0",
        f" {rng.randrange(30, 80)}",
        f" {rng.uniform(60, 700):.2f}",
        f"{rng.randrange(200, 1980)}",
        f"{rng.randrange(1000, 2600)}",
        f" {rng.randrange(0, 101)}",
        "x",
    ]
    k = rng.randrange(20)
    if k == 0:
        fields[5] = " [N/A]"
    elif k == 1:
        fields[5] = "nan"
    elif k == 2:
        fields = fields[:9]
    elif k == 3:
        fields[8] = ""
    row = {
        "unix": t,
        "host_memory": {"available": rng.randrange(2**30, 2**36), "used": rng.randrange(2**30, 2**35)},
        "gpu_csv": ",".join(fields),
    }
    if rng.randrange(10):
        row["host_cpu_percent"] = round(rng.uniform(0, 100), 1)
    elif rng.randrange(2):
        row["host_cpu_percent"] = None
    rows.append(row)
path = out / "telemetry_golden.jsonl"
path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
start = rows[0]["unix"] + 100.0
end = rows[-1]["unix"]
windows = [[None, None], [start, start + 300], [end - 300, end], [end - 60, end]]
results = [telemetry_summary(path, a, b) for a, b in windows]
for r in results:
    del r["source"]
(out / "telemetry_golden.expected.json").write_text(
    json.dumps({"windows": windows, "results": results}, indent=1) + "\n", encoding="utf-8"
)
