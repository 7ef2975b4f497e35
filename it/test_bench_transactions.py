"""Smoke test of the Spark transaction benchmark (benchmarks/transactions): its --quick mode runs
one point (2 s at 200 events/s) of the four TStream applications through ss.transact, the Delta
MERGE peer and the Redis peer, and every method's final States equal the sequential oracle's."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from sharedstate.testing.jvm_options import benchmark_env

ROOT = Path(__file__).resolve().parents[1]
METHODS = {"sharedstate", "delta-merge", "redis"}


@pytest.mark.slow
def test_quick_run_checks_every_method_against_the_oracle(tmp_path):
    if shutil.which("redis-server") is None:
        pytest.skip("redis-server not installed (make bench-deps installs Debian's)")
    pytest.importorskip("redis", reason="the bench extra is not installed (make bench-deps)")
    out = tmp_path / "results"
    result = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks/transactions/bench_transactions.py"), "--quick", "--out", str(out),
         "--scratch", str(tmp_path / "scratch")],
        env=benchmark_env(),
        capture_output=True,
        text=True,
        timeout=900,
        cwd=ROOT,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    data = json.loads((out / "spark-runs.json").read_text())
    points, searches = data["points"], data["searches"]
    every = {(a, m) for a in ("GS", "SL", "OB", "TP") for m in METHODS}
    assert {(p["app"], p["method"]) for p in points} == every
    assert {(s["app"], s["method"]) for s in searches} == every
    for p in points:
        assert p["complete"] and p["correct"], p
        assert p["processed"] == p["events"] and p["p99_ms"] is not None and p["batches"]["count"] > 0, p
    table = (out / "spark-table.md").read_text()
    assert "| TP | sharedstate |" in table and "max sustained events/s" in table, table
    assert (out / "spark-plot.png").stat().st_size > 0
