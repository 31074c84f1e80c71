#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks for tests/torch/run.sh (stdlib only).

  check_steps.py truth ORACLE.json TRUTH.json
      The oracle's outliers are exactly the truth's stall and sleep steps; each stall step's largest part is
      `dataloader` and each sleep step's `other`, with an excess of at least half the stall / sleep.
      Exit 1 with the reason otherwise; exit 3 when the only fault is extra outliers (a step slowed by a loaded
      machine: run.sh then records the trace again).
  check_steps.py compare FLINCH.json ORACLE.json
      `flinch-trace trace T --steps --json` against the oracle: the same steps in the same order, names,
      indices, `start_ts_us` exactly (the number's decimal text against the oracle's ns), `duration_ms` and
      every part of `breakdown_ms` within 1e-9 ms, the parts summing to the duration, the `outlier` flags; and,
      where `step_summary.outliers` lists `index` and `largest_part`, those too.
  check_steps.py summary FLINCH_TRACE.json TRACE
      `flinch-trace trace T --json` (no --steps) read the whole trace: its cpu_op and user_annotation event
      counts equal the file's.
"""
import gzip
import json
import sys
from decimal import Decimal

TOL_MS = 1e-9


def load(path, **kw):
    raw = open(path, "rb").read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw.decode("utf-8"), **kw)


def fail(msg, code=1):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(code)


def truth(oracle_path, truth_path):
    out, t = load(oracle_path), load(truth_path)
    summ = out["step_summary"]
    indices = [s["index"] for s in out["steps"]]
    if indices != t["steps"]:
        fail(f"steps {indices}, expected {t['steps']}")
    want = {i: ("dataloader", t["stall_ms"]) for i in t["stall_steps"]}
    want.update({i: ("other", t["sleep_ms"]) for i in t["sleep_steps"]})
    got = {o["index"]: o for o in summ["outliers"]}
    missing = sorted(set(want) - set(got))
    if missing:
        fail(f"steps {missing} should be outliers; outliers: {sorted(got)}")
    for i, (part, slow_ms) in sorted(want.items()):
        o = got[i]
        if o["largest_part"] != part:
            fail(f"step {i}: largest part {o['largest_part']} (+{o['largest_part_excess_ms']:.1f} ms), expected {part}")
        if o["largest_part_excess_ms"] < slow_ms / 2:
            fail(f"step {i}: {part} only +{o['largest_part_excess_ms']:.1f} ms, expected about +{slow_ms} ms")
    extra = sorted(set(got) - set(want))
    if extra:
        desc = ", ".join(f"#{i} {got[i]['duration_ms']:.1f} ms (+{got[i]['largest_part_excess_ms']:.1f} ms "
                         f"{got[i]['largest_part']})" for i in extra)
        fail(f"extra outliers (median {summ['median_ms']:.2f} ms, threshold +{summ['threshold_ms']:.2f} ms): {desc}",
             code=3)
    print(f"ok: {len(indices)} steps, median {summ['median_ms']:.2f} ms, outliers "
          + ", ".join(f"#{o['index']} {o['duration_ms']:.1f} ms (+{o['largest_part_excess_ms']:.1f} ms {o['largest_part']})"
                      for o in summ["outliers"]))


def close(a, b):
    return isinstance(a, (int, float, Decimal)) and not isinstance(a, bool) and abs(float(a) - float(b)) <= TOL_MS


def compare(flinch_path, oracle_path):
    got = load(flinch_path, parse_float=Decimal)
    want = load(oracle_path)
    gs, ws = got.get("steps"), want["steps"]
    if not isinstance(gs, list):
        fail(f"{flinch_path}: no \"steps\" list")
    if len(gs) != len(ws):
        fail(f"{len(gs)} steps, the oracle has {len(ws)}")
    errors = []
    for k, (g, w) in enumerate(zip(gs, ws)):
        where = f"steps[{k}] ({w['name']})"
        if g.get("name") != w["name"] or g.get("index") != w["index"]:
            errors.append(f"{where}: name/index {g.get('name')!r}/{g.get('index')!r}, oracle {w['name']!r}/{w['index']}")
        ts = g.get("start_ts_us")
        if not isinstance(ts, (int, Decimal)) or Decimal(ts) * 1000 != w["start_ns"]:
            errors.append(f"{where}: start_ts_us {ts}, oracle {w['start_ts_us']} (exact)")
        if not close(g.get("duration_ms"), w["duration_ms"]):
            errors.append(f"{where}: duration_ms {g.get('duration_ms')}, oracle {w['duration_ms']}")
        gb = g.get("breakdown_ms") or {}
        if set(gb) != set(w["breakdown_ms"]):
            errors.append(f"{where}: breakdown parts {sorted(gb)}, oracle {sorted(w['breakdown_ms'])}")
        for part, v in w["breakdown_ms"].items():
            if part in gb and not close(gb[part], v):
                errors.append(f"{where}: {part} {gb[part]} ms, oracle {v} ms")
        if gb and all(isinstance(v, (int, Decimal)) for v in gb.values()) and \
                abs(sum(float(v) for v in gb.values()) - float(g.get("duration_ms", 0))) > 1e-6:
            errors.append(f"{where}: parts sum to {sum(float(v) for v in gb.values())}, duration {g.get('duration_ms')}")
        if g.get("outlier") is not w["outlier"]:
            errors.append(f"{where}: outlier {g.get('outlier')!r}, oracle {w['outlier']}")
    g_out = (got.get("step_summary") or {}).get("outliers")
    if isinstance(g_out, list) and all(isinstance(o, dict) and "index" in o and "largest_part" in o for o in g_out):
        gp = [(o["index"], o["largest_part"]) for o in g_out]
        wp = [(o["index"], o["largest_part"]) for o in want["step_summary"]["outliers"]]
        if sorted(gp) != sorted(wp):
            errors.append(f"step_summary.outliers (index, largest_part) {gp}, oracle {wp}")
    if errors:
        for e in errors[:20]:
            print(f"  {e}", file=sys.stderr)
        fail(f"{len(errors)} differences from the oracle")
    print(f"ok: {len(ws)} steps equal the oracle")


def summary(flinch_path, trace_path):
    got = load(flinch_path)
    events = load(trace_path)["traceEvents"]
    cats = got.get("categories")
    if not isinstance(cats, dict):
        fail(f"{flinch_path}: no \"categories\" object")
    for cat in ("cpu_op", "user_annotation"):
        n = sum(1 for e in events if e.get("ph") == "X" and e.get("cat") == cat)
        have = (cats.get(cat) or {}).get("events")
        if have != n:
            fail(f"trace --json counts {have} {cat} events, the file has {n}")
    print(f"ok: trace --json read {len(events)} events")


if __name__ == "__main__":
    cmds = {"truth": truth, "compare": compare, "summary": summary}
    if len(sys.argv) != 4 or sys.argv[1] not in cmds:
        sys.exit(__doc__)
    cmds[sys.argv[1]](sys.argv[2], sys.argv[3])
