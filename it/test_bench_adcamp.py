"""Smoke test of the AdCamp benchmark harness (benchmarks/adcamp): its --quick mode runs every method
once on the same generated input and writes results whose rows were checked against the oracle.
The harness's parts have unit tests beside it (benchmarks/adcamp/test_harness.py)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sharedstate.testing.jvm_options import benchmark_env

ROOT = Path(__file__).resolve().parents[1]
METHODS = {"sharedstate", "stream-stream join", "delta stream-static", "redis foreachBatch"}


@pytest.mark.slow
def test_quick_run_checks_every_method_against_the_oracle(tmp_path):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server not installed (make bench-deps installs Debian's)")
    pytest.importorskip("redis", reason="the bench extra is not installed (make bench-deps)")
    out = tmp_path / "results"
    result = subprocess.run(
        [
            sys.executable,
            str(ROOT / "benchmarks/adcamp/run.py"),
            "--quick",
            "--out",
            str(out),
            "--cache",
            str(tmp_path / "cache"),
        ],
        env=benchmark_env(),
        capture_output=True,
        text=True,
        timeout=600,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]

    data = json.loads((out / "results.json").read_text())
    points = data["points"]
    assert {p["method"] for p in points} == METHODS
    for p in points:
        # every row a method wrote was compared with the offline as-of join, and none differed
        assert p["output_rows"] > 0, p
        assert p["wrong"] == 0 and p["duplicates"] == 0, p
        assert p["events"] > 0 and p["output_rows"] + p["missing"] >= p["events"]
    assert {s["method"] for s in data["summary"]} == METHODS
    table = (out / "table.md").read_text()
    assert all(f"| 1,000 | {m} |" in table for m in METHODS), table
    assert (out / "plot.png").stat().st_size > 0
    assert "run.py --quick" in (out / "command.txt").read_text()
    assert data["meta"]["spark"]["spark.sql.parquet.outputTimestampType"] == "TIMESTAMP_MICROS"
