"""Shared fixtures: the repository, and the `flinch-trace` binary whose output the wheel must match.

The binary is `$FLINCH_TRACE_BIN`, else `target/debug/flinch-trace` (scripts/test-all.sh builds it
before running these tests). Without it the parity tests fail: they never pass vacuously.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


def cli_path() -> Path:
    given = os.environ.get("FLINCH_TRACE_BIN")
    path = Path(given).resolve() if given else REPO / "target" / "debug" / "flinch-trace"
    if not path.is_file():
        pytest.fail(
            f"the flinch-trace binary is missing at {path}: run `cargo build -p flinch-trace` "
            "or set FLINCH_TRACE_BIN"
        )
    return path


@pytest.fixture(scope="session")
def cli() -> Path:
    return cli_path()


def run_cli(cli: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    """Runs `flinch-trace ARGS`, returning its output (text)."""
    done = subprocess.run(
        [str(cli), *args], capture_output=True, text=True, timeout=300, check=False
    )
    if check and done.returncode != 0:
        raise AssertionError(f"flinch-trace {' '.join(args)}: exit {done.returncode}: {done.stderr}")
    return done


def cli_json(cli: Path, *args: str) -> dict:
    return json.loads(run_cli(cli, *args).stdout)


def bundled_traces() -> list[Path]:
    """The real traces of tests/traces (not the expected outputs beside them)."""
    found = []
    for p in sorted((REPO / "tests" / "traces").rglob("*")):
        name = p.name
        if not p.is_file() or name.endswith(".expected.json"):
            continue
        if name.endswith(".json") or name.endswith(".json.gz"):
            found.append(p)
    return found
