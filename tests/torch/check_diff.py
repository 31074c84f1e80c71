#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Checks `flinch-trace diff A B --steps --json` of a pair of real PyTorch runs changed in a known way.

Usage: check_diff.py stall DIFF_JSON TRUTH_B   B's data loader stalls in TRUTH_B's stall_steps, A's nowhere:
                                               the data loader moved most, up by the stalls, in exactly
                                               those steps of B; the loading op moved most among the ops.
       check_diff.py wider DIFF_JSON           B's hidden layers are wider: the median step is up
                                               significantly, cpu_exec moved most (in B's steps), and the
                                               matrix products (aten::mm, aten::addmm, AddmmBackward0) grew.
Exit 0 when it holds, 1 (with what failed) when not.
"""
import json
import sys

LOADER = "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__"


def fail(msg):
    print(f"check_diff: {msg}", file=sys.stderr)
    sys.exit(1)


def stall(d, truth):
    s = d.get("steps") or fail("no steps section")
    stalled, stall_ms = truth["stall_steps"], truth["stall_ms"]
    want = len(stalled) * stall_ms
    p = s["parts"][0]
    if p["part"] != "dataloader" or p["moved_in"] != "b":
        fail(f"the part that moved most is {p['part']} in {p['moved_in']}, not dataloader in b")
    if not (0.95 * want < p["delta_total_ms"] < want + 0.5 * stall_ms):
        fail(f"dataloader moved by {p['delta_total_ms']} ms, not about {want}")
    if p["moved_steps"] != stalled:
        fail(f"dataloader moved in steps {p['moved_steps']}, not the stalled {stalled}")
    op = d["ops"][0]
    if op["name"] != LOADER or op["delta_sum_ms"] < 0.95 * want:
        fail(f"the op that moved most is {op['name']} ({op['delta_sum_ms']} ms)")
    if "; dataloader +" not in d["verdict"]:
        fail(f"the verdict does not name the data loader: {d['verdict']}")


def wider(d):
    s = d.get("steps") or fail("no steps section")
    if not (s["significant"] and s["ci95_pct"][0] > 0):
        fail(f"the median step is not significantly up: {d['verdict']}")
    p = s["parts"][0]
    if p["part"] != "cpu_exec" or p["moved_in"] != "b" or p["delta_total_ms"] <= 0:
        fail(f"the part that moved most is {p['part']} ({p['delta_total_ms']} ms in {p['moved_in']})")
    ops = {o["name"]: o for o in d["ops"] if o["category"] == "cpu_op"}
    for name in ("aten::mm", "aten::addmm", "AddmmBackward0"):
        o = ops.get(name) or fail(f"{name} is not among the top changes")
        if o["status"] != "both" or not o["ratio_sum"] or o["ratio_sum"] <= 1.2:
            fail(f"{name} did not grow: {o}")
    if "no significant change" in d["verdict"].split(";")[0]:
        fail(f"verdict: {d['verdict']}")


def main(argv):
    if len(argv) >= 3 and argv[1] == "stall":
        stall(json.load(open(argv[2])), json.load(open(argv[3])))
    elif len(argv) == 3 and argv[1] == "wider":
        wider(json.load(open(argv[2])))
    else:
        fail(__doc__)
    print(f"check_diff {argv[1]}: ok")


if __name__ == "__main__":
    main(sys.argv)
