"""The partial-State benchmark's runner in --quick mode (tiny workloads, one run: the CI budget): every
application and side runs, every output equals the oracle, and the JSON, table, plot and command are
written; in sustained mode too (fraud, barrier: fixed tiny rates instead of a search). And the
benchmark's vectorised fraud oracle equals the sequential one of sharedstate.testing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bench_partial import APPS, SIDES, search
from workloads import fraud_expected, fraud_expected_sequential

from sharedstate.testing.fraud import make_fraud
from sharedstate.testing.jvm_options import benchmark_env

HERE = Path(__file__).resolve().parent
# A quick point takes seconds to a minute on the CI machine; a point that hangs fails in 5 minutes, not 10.
POINT_TIMEOUT_S = 300


@pytest.mark.parametrize("seed", range(6))
def test_vectorised_fraud_oracle_equals_the_sequential_one(seed):
    # rules before any transaction too (no total yet), windows of any width, aligned or not
    work = make_fraud(seed, transactions=[300, 20, 900][seed % 3], rules=[4, 60, 12][seed % 3], window_s=7.5 + seed)
    assert fraud_expected(work).equals(fraud_expected_sequential(work))


def test_search_brackets_the_highest_sustained_rate():
    for limit in (300.0, 1_000.0, 5_000.0, 40_000.0):
        tried = []

        def run_at(rate, limit=limit, tried=tried):
            tried.append(rate)
            return rate <= limit

        best = search(run_at, 1_000.0, 1.2)
        assert best is not None and best <= limit
        failed = min(r for r in tried if r > limit)
        assert failed / best <= 1.2, (limit, tried)
    assert search(lambda rate: False, 1_000.0, 1.2) is None  # not even the floor (125/s)


@pytest.mark.slow
def test_quick_run_checks_every_side_against_the_oracle(tmp_path):
    out = tmp_path / "out"
    subprocess.run(
        [
            sys.executable,
            str(HERE / "bench_partial.py"),
            "--out",
            str(out),
            "--quick",
            "--modes",
            "capacity",
            "--timeout",
            str(POINT_TIMEOUT_S),
        ],
        env=benchmark_env(),
        check=True,
        timeout=1200,
    )
    doc = json.loads((out / "partial.json").read_text())
    seen = {(p["app"], p["side"], p["mode"]) for p in doc["points"]}
    assert seen == {(a, s, "capacity") for a in APPS for s in SIDES}
    for p in doc["points"]:
        assert p["correct"] and p["wrong"] == 0, p
        assert p["events_per_s"] > 0 and p["p99_ms"] >= p["p50_ms"] > 0, p
    assert set(doc["ratios"]) == set(APPS)
    table = (out / "table.md").read_text()
    assert all(f"| {a} | {s} |" in table for a in APPS for s in SIDES)
    assert (out / "plot.png").stat().st_size > 0
    assert (out / "command.txt").read_text().startswith(".venv/bin/python benchmarks/partial/bench_partial.py")


@pytest.mark.slow
def test_quick_sustained_points_equal_the_oracle(tmp_path):
    out = tmp_path / "out"
    apps = ["fraud", "barrier"]
    subprocess.run(
        [sys.executable, str(HERE / "bench_partial.py"), "--out", str(out), "--quick", "--apps", ",".join(apps)],
        env=benchmark_env(),
        check=True,
        timeout=1200,
    )
    doc = json.loads((out / "partial.json").read_text())
    modes = {(p["app"], p["side"], p["mode"]) for p in doc["points"]}
    assert {(a, s, m) for a in apps for s in SIDES for m in ("common", "rate")} <= modes
    for p in doc["points"]:
        assert p["correct"] and p["wrong"] == 0, p
        assert p["batch_rows"] and p["batch_rows"] > 0, p
    table = (out / "table.md").read_text()
    assert "Sustained rate" in table and all(f"| {a} | {s} |" in table for a in apps for s in SIDES)
