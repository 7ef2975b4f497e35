"""The partial-State benchmark's runner in --quick mode (tiny workloads, one run, the capacity point
only: the CI budget): every application and side runs, every output equals the oracle, and the
JSON, table, plot and command are written."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from bench_partial import APPS, SIDES

HERE = Path(__file__).resolve().parent


@pytest.mark.slow
def test_quick_run_checks_every_side_against_the_oracle(tmp_path):
    out = tmp_path / "out"
    subprocess.run(
        [sys.executable, str(HERE / "bench_partial.py"), "--out", str(out), "--quick", "--modes", "capacity"],
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
