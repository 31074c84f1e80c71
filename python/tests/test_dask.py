"""examples/dask_ranks.py on a two-worker LocalCluster (and on a local Ray): the same merged
summary as the CLI's per-file `trace --json --mergeable` outputs merged serially, and the known
content of the ranks (tests/ranks/gen_ranks.py)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys

import flinch_trace
import pytest

from conftest import REPO, cli_json, run_cli

RANKS = 16


def load_generator():
    spec = importlib.util.spec_from_file_location("gen_ranks", REPO / "tests/ranks/gen_ranks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    gen = load_generator()
    out = tmp_path_factory.mktemp("ranks")
    return gen, gen.write(out, RANKS)


def test_local_cluster_equals_the_cli_merged_serially(cli, ranks, tmp_path):
    gen, paths = ranks
    # Serially, through the command line: one summary file per rank, then `merge`.
    files = []
    for k, p in enumerate(paths):
        f = tmp_path / f"summary-{k}.json"
        f.write_text(run_cli(cli, "trace", str(p), "--json", "--mergeable").stdout)
        files.append(f)
    want = cli_json(cli, "merge", *map(str, files), "--json")
    assert flinch_trace.merge([json.loads(f.read_text()) for f in files]) == want

    # On Dask: two worker processes, the tree 16 -> 6 -> 2 -> 1 (split_every 3), carrying dicts
    # and carrying JSON text.
    got = None
    for carry in ["dict", "text"]:
        out = tmp_path / f"merged-{carry}.json"
        done = subprocess.run(
            [sys.executable, str(REPO / "examples/dask_ranks.py"), "--workers", "2",
             "--split-every", "3", "--carry", carry, "--out", str(out), *map(str, paths)],
            capture_output=True, text=True, timeout=300,
        )
        assert done.returncode == 0, done.stderr
        assert "16 traces on LocalCluster of 2 workers" in done.stderr, done.stderr
        got = json.loads(out.read_text())
        assert got == want, carry

    # On a local Ray: the same tree of tasks.
    out = tmp_path / "merged-ray.json"
    done = subprocess.run(
        [sys.executable, str(REPO / "examples/dask_ranks.py"), "--ray", "--split-every", "3",
         "--carry", "text", "--out", str(out), *map(str, paths)],
        capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert "16 traces on Ray (local)" in done.stderr, done.stderr
    assert json.loads(out.read_text()) == want

    # And what the generator put in.
    exp = gen.expected(RANKS)
    assert got["ranks"]["n"] == RANKS
    # The merge lists ranks by source, whatever order they were merged in.
    assert got["ranks"]["sources"] == sorted(str(p) for p in paths)
    t = got["totals"]
    assert (t["events"], t["duration_events"]) == (exp["events"], exp["duration_events"])
    assert t["duration_sum_ns"] == exp["duration_sum_us"] * 1000
    ops = {(o["category"], o["name"]): o for o in got["largest_ops_by_duration_sum"]}
    for key, (n, sum_us) in exp["ops"].items():
        assert ops[key]["duration_us"]["n"] == n, key
        assert ops[key]["duration_sum_us"] == pytest.approx(sum_us, abs=1e-6), key
    assert len(t["busy_union_us_by_rank"]) == RANKS


def test_folder_argument_takes_ranks_in_natural_order(ranks):
    spec = importlib.util.spec_from_file_location("dask_ranks", REPO / "examples/dask_ranks.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    _, paths = ranks
    found = mod.trace_paths([str(paths[0].parent)])
    assert [p.name for p in found] == [p.name for p in paths]
    assert found[2].name == "rank-2.json" and found[10].name == "rank-10.json"
