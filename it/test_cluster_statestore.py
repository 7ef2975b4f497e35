"""Issue 22, Shared, on local-cluster[2,1,1024]: the window aggregation runs on two executor JVMs
with the shared state store, each executor's tasks publish their partitions' versions into the
State (hosted on both executors) and report to the driver, which commits each version once every
partition has; a second query fetch-joins each view with its campaign's totals as of the view time.
Every output row and the State's as-of answers equal the pandas oracle (the same application and
checks as python/tests/test_statestore_shared.py, there on local[3])."""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / "python" / "tests" / "test_statestore_shared.py"


def shared_module():
    spec = importlib.util.spec_from_file_location("statestore_shared_app", SHARED)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.slow
def test_cluster_window_totals_published_and_fetch_joined_equal_the_oracle(tmp_path):
    import pyspark

    shared = shared_module()
    ev, files, vw = shared.workload(seed=4022)
    shared.write_inputs(tmp_path, files, vw)
    conf = {
        "spark.authenticate": "true",
        "spark.authenticate.secret": secrets.token_hex(16),
        "spark.sql.shuffle.partitions": "4",
        "spark.driver.memory": "1g",
    }
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
    env.update(
        SPARK_HOME=str(Path(pyspark.__file__).parent),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    result = subprocess.run(
        [sys.executable, str(SHARED), str(tmp_path), "local-cluster[2,1,1024]", json.dumps(conf)],
        env=env,
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-8000:]
    shared.check(tmp_path, ev, vw)
