#!/usr/bin/env python3
"""Writes a runs folder with one run of many request rows and telemetry rows, for the memory
checks of `flinch-trace summarize` (tests/robustness/memory.sh, BENCHMARKS.md).

Usage: tests/robustness/gen_runs.py OUT_DIR REQUEST_ROWS [TELEMETRY_ROWS]

The run `big`: a report whose sustained phase spans the rows, `requests.jsonl` with
REQUEST_ROWS rows (a warmup row, then sustained rows submitted 1 ms apart, so every trend
window holds rows; some values ints, some floats, some missing or not numbers), and
`big-host/telemetry.jsonl` with TELEMETRY_ROWS rows (default REQUEST_ROWS) 10 ms apart. The
same arguments give the same bytes.
"""

import json
import sys
from pathlib import Path


def main() -> None:
    out = Path(sys.argv[1])
    n = int(sys.argv[2])
    t_rows = int(sys.argv[3]) if len(sys.argv) > 3 else n
    run, host = out / "big", out / "big-host"
    run.mkdir(parents=True, exist_ok=True)
    host.mkdir(parents=True, exist_ok=True)
    start = 1712000280.25
    wall = max(n * 0.001, 1.0)
    (run / "report.json").write_text(json.dumps({
        "status": "completed", "start_unix": 1712000019.75, "startup_s": 61.25,
        "sustained_start_unix": start, "sustained_wall_s": wall}))
    (host / "status.json").write_text(json.dumps({"start_unix": 1712000001.5}))
    (host / "command.log").write_text("Model loading took 12.5 s\n")
    x = 12345
    with open(run / "requests.jsonl", "w") as f:
        f.write(json.dumps({"request_id": "w0", "phase": "warmup", "submitted_unix": 1712000160.25,
                            "ttft_s": 0.25, "wall_s": 1.5}) + "\n")
        for i in range(n):
            x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
            r = {"request_id": f"s-{i}", "phase": "sustained",
                 "submitted_unix": start + i * 0.001,
                 "wall_s": (x >> 40) / 1e5, "ttft_s": (x >> 44) / 1e6,
                 "decode_tok_per_s": (x >> 50) if i % 3 else None,
                 "total_wall_s": round((x >> 38) / 1e6, 3), "ttfa_ms": (x >> 52),
                 "rtf_total": ((x >> 20) % 3000) / 1000, "stall_at_ttfa_ms": (x >> 58) - 8}
            if i % 1000 == 7:
                r["rtf_total"] = "n/a"
            f.write(json.dumps(r) + "\n")
    with open(host / "telemetry.jsonl", "w") as f:
        for i in range(t_rows):
            x = (x * 6364136223846793005 + 1442695040888963407) % (1 << 64)
            p = 100 + (x >> 40) % 60000 / 100
            f.write(json.dumps({
                "unix": 1712000002.03 + i * 0.01,
                "host_memory": {"available": 100000000000 + (x >> 30), "used": 50000000000 + (x >> 34)},
                "host_cpu_percent": (x >> 54) / 10,
                "gpu_csv": f"0, NVIDIA H100, {x >> 48}, 81559, {30 + (x >> 60)}, {p:.2f}, 1755, 2619, {(x >> 57)}, P0",
                "power": {"ACLineStatus": 1}}) + "\n")


if __name__ == "__main__":
    main()
