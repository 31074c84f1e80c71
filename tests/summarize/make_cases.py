#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the runs folders under tests/summarize/cases/ (deterministic; stdlib only).

Each case is one runs folder. A case named X.clean is the input X with what flinch-trace skips
removed; the reference runs on X.clean (it crashes on X), and the test compares flinch-trace's
output on X, minus its `warnings`, to that golden.
"""
import gzip
import json
import random
import shutil
import zlib
from pathlib import Path

CASES = Path(__file__).resolve().parent / "cases"
T0 = 1712000000.25  # sustained phase and runs start near here


def gpu_csv(rng, power, gpu=0):
    fields = [
        str(gpu),
        " NVIDIA H100 80GB HBM3",
        f" {rng.randint(1000, 80000)}",
        " 81559",
        f" {rng.randint(30, 80)}",
        f" {power:.2f}",
        f" {rng.choice([1980, 1755, 345])}",
        " 2619",
        f" {rng.randint(0, 100)}",
        " P0",
    ]
    return ",".join(fields)


def telemetry_rows(rng, start, count, period=2.0, jitter=0.3):
    rows, t = [], start
    for i in range(count):
        t += period + rng.uniform(-jitter, jitter)
        rows.append(
            {
                "unix": round(t, 6),
                "host_memory": {
                    "total": 270000000000,
                    "available": rng.randint(100000000000, 200000000000),
                    "used": rng.randint(50000000000, 150000000000),
                    "percent": round(rng.uniform(20, 60), 1),
                },
                "host_cpu_percent": round(rng.uniform(0, 100), 1),
                "gpu_csv": gpu_csv(rng, rng.uniform(60, 700)),
                "power": {"ACLineStatus": 1, "BatteryFlag": 128},
            }
        )
    return rows


def write_jsonl(path, rows, raw_lines=()):
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(r) for r in rows]
    for index, text in raw_lines:
        lines.insert(index, text)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_json(path, obj):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=2) + "\n", encoding="utf-8")


def requests(rng, sustained_start, duration, count, warmups=2):
    rows = []
    for i in range(warmups):
        rows.append(
            {
                "request_id": f"warmup-{i}",
                "phase": "warmup",
                "length_band": "short",
                "concurrency": 1,
                "submitted_unix": sustained_start - 120 + 10 * i,
                "wall_s": round(rng.uniform(1, 5), 3),
                "ttft_s": None if i == 0 else 0.25,
                "ttfa_ms": 812.5,
                "total_wall_s": 4.5,
                "rtf_total": 0.8,
            }
        )
    for i in range(count):
        submitted = sustained_start + duration * i / count + rng.uniform(0, 1)
        rows.append(
            {
                "request_id": f"s-{i}",
                "phase": "sustained",
                "submitted_unix": submitted,
                "wall_s": round(rng.uniform(0.5, 9), 4),
                "ttft_s": round(rng.uniform(0.05, 0.9), 4),
                "decode_tok_per_s": rng.choice([round(rng.uniform(20, 90), 2), None, True]),
                "total_wall_s": round(rng.uniform(1, 12), 3),
                "ttfa_ms": rng.randint(80, 1500),
                "rtf_total": rng.choice([round(rng.uniform(0.3, 1.6), 3), 1, 2, None, False]),
                "stall_at_ttfa_ms": rng.choice([0, 0, 12.5, 300, None]),
            }
        )
    return rows


LOG = (
    "INFO starting\n"
    "INFO Loading model weights took 12.3 GiB and 8.1 s\r\n"
    "INFO Model loading took 9.0 s\n"
    "INFO init engine (profile, create kv cache, warmup model) took 41.2 seconds\n"
    "INFO torch.compile took 20.5 s in total\x0bINFO Captured talker_mtp graphs in 3.1 s\n"
    "INFO engine startup completed\u2028tail after a unicode line separator\n"
    + "".join(f"WARN Dropping output for unknown req r-{i} \xe9\n" for i in range(9))
    + "ERROR force killing remaining process 4242\n"
    + "bad bytes follow: "
)


def base_run(root, name, rng, *, sustained=True, minutes=20, log=True, status=True, wall_s=900, offset_s=180):
    start = T0 + 100
    rows = telemetry_rows(rng, T0, int(minutes * 60 / 2))
    write_jsonl(root / f"{name}-host" / "telemetry.jsonl", rows)
    report = {"status": "completed", "start_unix": start - 80.5, "startup_s": 61.25, "cache_condition": "warm"}
    if sustained:
        report.update({"sustained_start_unix": start + offset_s, "sustained_wall_s": wall_s})
    write_json(root / name / "report.json", report)
    if status:
        write_json(root / f"{name}-host" / "status.json", {"start_unix": T0 - 20})
    if log:
        path = root / f"{name}-host" / "command.log"
        path.write_bytes(LOG.encode("utf-8") + b"\xff\xfe invalid utf-8\n")
    write_jsonl(root / name / "requests.jsonl", requests(rng, start + offset_s, wall_s, 120))
    return rows


def case_basic(root):
    rng = random.Random(1)
    base_run(root, "alpha", rng)
    # An appended recording: a second session appended to the same file after a 40 min pause,
    # and int timestamps in a short run without a report.
    rows = telemetry_rows(rng, T0, 60) + telemetry_rows(rng, T0 + 2400, 40, period=1.0)
    write_jsonl(root / "appended-host" / "telemetry.jsonl", rows)
    short = []
    for i, t in enumerate([0, 1, 2, 9, 10, 11, 30, 31]):
        r = telemetry_rows(rng, 0, 1)[0]
        r["unix"] = 1712000000 + t
        r.pop("power")
        short.append(r)
    write_jsonl(root / "short-host" / "telemetry.jsonl", short)
    # A report without sustained fields, no status.json, no command.log.
    base_run(root, "nosustained", rng, sustained=False, minutes=3, log=False, status=False)
    # A run shorter than 5 min: a 2 min sustained phase (the 5 min windows reach before it).
    base_run(root, "brief", rng, minutes=4, wall_s=120, offset_s=-40)
    # Empty telemetry file, a host folder without telemetry, and a *-host file.
    write_jsonl(root / "empty-host" / "telemetry.jsonl", [])
    (root / "empty-host" / "telemetry.jsonl").write_text("", encoding="utf-8")
    (root / "notelemetry-host").mkdir(parents=True)
    (root / "file-host").write_text("not a folder\n", encoding="utf-8")
    # Traces that are not analyzed: no report, and a report that is not completed.
    (root / "diag-trace" / "traces" / "sub").mkdir(parents=True)
    (root / "diag-trace" / "traces" / "sub" / "rank0.json").write_text('{"traceEvents": []}\n')
    (root / "diag-trace" / "traces" / "notes.txt").write_text("ignored\n")
    (root / "failed-trace" / "traces").mkdir(parents=True)
    write_json(root / "failed-trace" / "report.json", {"status": "failed"})
    (root / "failed-trace" / "traces" / "a.json.gz").write_bytes(gzip.compress(b'{"traceEvents": []}', mtime=0))
    (root / "failed-trace" / "traces" / "b.json").write_text('{"traceEvents": []}')


def case_oddvalues(root):
    """Non-finite values, bools in numeric fields, strings, two GPUs, NaN tokens, mixed ints."""
    rng = random.Random(2)
    rows = telemetry_rows(rng, T0, 200, period=1.0)
    for i, r in enumerate(rows):
        # Full-precision timestamps (17 significant digits): parsing must round correctly.
        r["unix"] = T0 + i + rng.random()
        if i % 7 == 0:
            r["host_cpu_percent"] = True
        if i % 11 == 0:
            r["host_memory"]["available"] = "lots"
        if i % 13 == 0:
            r["gpu_csv"] = r["gpu_csv"].replace(r["gpu_csv"].split(",")[5], " nan")
        if i % 17 == 0:
            r["gpu_csv"] = r["gpu_csv"].replace(r["gpu_csv"].split(",")[2], " inf")
        if i % 19 == 0:
            r["gpu_csv"] = r["gpu_csv"] + "\n" + gpu_csv(rng, 100.0, gpu=1)  # two GPUs
        if i % 23 == 0:
            r["gpu_csv"] = r["gpu_csv"].replace(r["gpu_csv"].split(",")[6], " [N/A]")
        if i % 29 == 0:
            r["host_memory"]["used"] = int(r["host_memory"]["used"])
            r["unix"] = int(r["unix"])
        if i % 31 == 0:
            r["power"]["ACLineStatus"] = 0
        if i % 37 == 0:
            r.pop("gpu_csv")
        if i % 41 == 0:
            r["gpu_csv"] = "0,a,1_024,x,4_5,2_0_0.5,1,2,3,4"
    text = [json.dumps(r) for r in rows]
    text[5] = text[5].replace('"host_cpu_percent": true', '"host_cpu_percent": NaN')
    text[6] = text[6].replace('"host_cpu_percent": ', '"host_cpu_percent": -Infinity, "x": ')
    path = root / "odd-host" / "telemetry.jsonl"
    path.parent.mkdir(parents=True)
    path.write_text("\r\n".join(text) + "\r\n\r\n", encoding="utf-8")


def case_crashes(root_bad, root_clean):
    """Inputs the reference crashes on, and their cleaned equivalents."""
    rng = random.Random(3)
    for root in (root_bad, root_clean):
        base_run(root, "run", random.Random(3))
    tel = root_bad / "run-host" / "telemetry.jsonl"
    rows = [json.loads(x) for x in tel.read_text().splitlines()]
    clean = []
    bad_text = []
    for i, r in enumerate(rows):
        if i == 3:
            bad_text.append("{not json")  # malformed line
            bad_text.append("")
        if i % 50 == 7:
            r2 = dict(r)
            r2.pop("unix")
            bad_text.append(json.dumps(r2))  # row missing unix: skipped
            continue
        if i % 50 == 8:
            r2 = dict(r)
            r2.pop("host_memory")
            bad_text.append(json.dumps(r2))  # row missing host_memory: skipped
            continue
        if i % 50 == 9:
            r2 = dict(r)
            r2["gpu_csv"] = None  # kept, GPU fields ignored
            bad_text.append(json.dumps(r2))
            r3 = dict(r)
            r3.pop("gpu_csv")
            clean.append(r3)
            continue
        bad_text.append(json.dumps(r))
        clean.append(r)
    tel.write_text("\n".join(bad_text) + "\n{\"unix\": 1, \"cut", encoding="utf-8")
    write_jsonl(root_clean / "run-host" / "telemetry.jsonl", clean)
    # requests: a null submitted_unix (left out of trends; clean: a time before every window),
    # a malformed line, a line that is not an object.
    req = [json.loads(x) for x in (root_bad / "run" / "requests.jsonl").read_text().splitlines()]
    req[10]["submitted_unix"] = None
    lines = [json.dumps(r) for r in req]
    lines.insert(20, "[1, 2]")
    lines.insert(30, "{\"phase\": ")
    (root_bad / "run" / "requests.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    req[10]["submitted_unix"] = 5
    write_jsonl(root_clean / "run" / "requests.jsonl", req)
    # A second run whose requests.jsonl is missing (clean: empty).
    base_run(root_bad, "noreq", random.Random(4))
    base_run(root_clean, "noreq", random.Random(4))
    (root_bad / "noreq" / "requests.jsonl").unlink()
    (root_clean / "noreq" / "requests.jsonl").write_text("", encoding="utf-8")
    # A malformed report.json (clean: none, so only whole_run) and a status.json that is a
    # list (clean: none, treated as {}).
    base_run(root_bad, "badreport", random.Random(5), minutes=2)
    base_run(root_clean, "badreport", random.Random(5), minutes=2)
    (root_bad / "badreport" / "report.json").write_text('{"status": "completed", "start_unix": ')
    (root_clean / "badreport" / "report.json").unlink()
    base_run(root_bad, "badstatus", random.Random(6), minutes=2)
    base_run(root_clean, "badstatus", random.Random(6), minutes=2)
    (root_bad / "badstatus-host" / "status.json").write_text("[1, 2]")
    (root_clean / "badstatus-host" / "status.json").unlink()


def trace_events(rng, count, t0_us=1712195495406752.8):
    """X events with epoch timestamps (3 fraction digits), overlaps, unicode, a missing cat."""
    cats = ["cpu_op", "kernel", "cuda_runtime", "gpu_memcpy", None]
    names = {"cpu_op": ["aten::mm", "aten::add_", "aten::copy_"], "kernel": ["sm90_gemm", "elementwise \u00e9"],
             "cuda_runtime": ["cudaLaunchKernel"], "gpu_memcpy": ["Memcpy HtoD"], None: ["orphan"]}
    events, t = [], t0_us
    for i in range(count):
        cat = rng.choice(cats)
        t += rng.choice([0.25, 1.5, 3.125, 40.001])
        e = {"ph": "X", "name": rng.choice(names[cat]), "pid": 1, "tid": rng.choice([1, 2]),
             "ts": f"{t:.3f}", "dur": f"{rng.choice([0.5, 1, 2.25, 17.375, 250.0]):.3f}",
             "args": {"External id": i, "note": "a,b]}{"}}
        if cat is not None:
            e["cat"] = cat
        events.append(e)
        if i % 10 == 0:
            events.append({"ph": "i", "name": "marker", "pid": 1, "tid": 1, "ts": f"{t:.3f}", "s": "t"})
    return events


def event_text(e):
    # ts/dur as JSON numbers written from their decimal text (not via a float round trip).
    d = dict(e)
    ts, dur = d.pop("ts"), d.pop("dur", None)
    body = json.dumps(d)[:-1]
    body += f', "ts": {ts}' + (f', "dur": {dur}' if dur is not None else "") + "}"
    return body


def trace_text(events, bare=False):
    inner = ",\n".join(event_text(e) for e in events)
    if bare:
        return "[\n" + inner + "\n]\n"
    return '{"schemaVersion": 1, "deviceProperties": [{"name": "H100"}],\n"traceEvents": [\n' + inner + '\n],\n"displayTimeUnit": "ms"}\n'


def case_traces(root):
    rng = random.Random(5)
    write_json(root / "bench-trace" / "report.json", {"status": "completed"})
    (root / "bench-trace" / "traces" / "sub").mkdir(parents=True)
    (root / "bench-trace" / "traces" / "rank0.json").write_text(trace_text(trace_events(rng, 400)), encoding="utf-8")
    packed = gzip.compress(trace_text(trace_events(rng, 300)).encode("utf-8"), mtime=0)
    (root / "bench-trace" / "traces" / "sub" / "rank1.pt.trace.json.gz").write_bytes(packed)
    (root / "pending-trace" / "traces").mkdir(parents=True)
    (root / "pending-trace" / "traces" / "x.json").write_text(trace_text(trace_events(rng, 3)))


def case_trace_crashes(root_bad, root_clean):
    """A bare-array trace, a plain trace cut mid-event, a .gz cut mid-stream: the reference
    errors on each; the clean twin holds the events that were read, in the object form."""
    rng = random.Random(6)
    for root in (root_bad, root_clean):
        write_json(root / "t-trace" / "report.json", {"status": "completed"})
        (root / "t-trace" / "traces").mkdir(parents=True)
    # A diagnostic whose report.json is malformed: listed as not analyzed (clean: no report).
    for root in (root_bad, root_clean):
        (root / "u-trace" / "traces").mkdir(parents=True)
        (root / "u-trace" / "traces" / "u.json").write_text('{"traceEvents": []}')
    (root_bad / "u-trace" / "report.json").write_text("{oops")
    bare = trace_events(rng, 200)
    (root_bad / "t-trace" / "traces" / "bare.json").write_text(trace_text(bare, bare=True))
    (root_clean / "t-trace" / "traces" / "bare.json").write_text(trace_text(bare))
    events = trace_events(rng, 300)
    text = trace_text(events)
    cut = text.index(event_text(events[150])) + 25  # inside event 150
    (root_bad / "t-trace" / "traces" / "cut.json").write_text(text[:cut])
    (root_clean / "t-trace" / "traces" / "cut.json").write_text(trace_text(events[:150]))
    events = trace_events(rng, 3000)
    text = trace_text(events).encode()
    packed = gzip.compress(text, mtime=0)
    cut = len(packed) // 2
    prefix = zlib.decompressobj(wbits=31).decompress(packed[:cut])
    # Events whose text ends (with its closing brace) inside the decompressed prefix are read.
    complete = sum(1 for e in events if text.index(event_text(e).encode()) + len(event_text(e)) <= len(prefix))
    (root_bad / "t-trace" / "traces" / "cutgz.json.gz").write_bytes(packed[:cut])
    packed = gzip.compress(trace_text(events[:complete]).encode("utf-8"), mtime=0)
    (root_clean / "t-trace" / "traces" / "cutgz.json.gz").write_bytes(packed)


def main():
    if CASES.exists():
        shutil.rmtree(CASES)
    case_basic(CASES / "basic")
    case_oddvalues(CASES / "oddvalues")
    case_crashes(CASES / "crashes", CASES / "crashes.clean")
    case_traces(CASES / "traces")
    case_trace_crashes(CASES / "tracecrash", CASES / "tracecrash.clean")


if __name__ == "__main__":
    main()
