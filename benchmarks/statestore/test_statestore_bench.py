"""The state store benchmark's harness in --quick mode: one small run of the three queries on every
provider (the plugin jar the test runs with always has sharedstate's); the JSON must name every
provider and carry every metric of each."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from queries import METRICS, PROVIDERS, QUERIES
from sharedstate.testing.jvm_options import benchmark_env

HERE = Path(__file__).resolve().parent


@pytest.mark.slow
def test_quick_run_reports_every_provider_and_metric(tmp_path):
    out = tmp_path / "out"
    subprocess.run(
        [sys.executable, str(HERE / "compare_providers.py"), "--out", str(out), "--quick", "--scratch", str(tmp_path)],
        env=benchmark_env(),
        check=True,
        timeout=600,
    )
    doc = json.loads((out / "statestore.json").read_text())
    assert set(doc["providers"]) == set(PROVIDERS)
    for name, info in doc["providers"].items():
        assert info["available"], (name, info)
    for p in PROVIDERS:
        for q in QUERIES:
            m = doc["runs"][0]["providers"][p]["queries"][q]
            for metric in METRICS:
                assert m[metric] > 0, (p, q, metric, m[metric])
            assert m["state_rows"] > 0, (p, q)
            assert doc["summary"][p][q]["batch_p50_ms"]["median"] == m["batch_p50_ms"]
            assert doc["ratios_to_rocksdb"][p][q]["recovery_ms"] > 0
        # the aggregation's state holds every key once they all came
        agg = doc["runs"][0]["providers"][p]["queries"]["aggregation"]
        assert agg["state_rows"] == doc["meta"]["sizes"]["agg_keys"], (p, agg["state_rows"])
    table = (out / "table.md").read_text()
    for q in QUERIES:
        assert f"## {q}" in table
    assert (out / "plot.png").stat().st_size > 0
    assert (out / "command.txt").read_text().startswith(".venv/bin/python benchmarks/statestore/compare_providers.py")
