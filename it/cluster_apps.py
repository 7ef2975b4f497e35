"""Runs one of it/apps/*.py, a Spark application on local-cluster (real executor JVMs), in a
subprocess and returns what it recorded.

A subprocess because the suite's own session is local[4] and a Python process has one SparkContext.
The pip pyspark package serves as SPARK_HOME, whose launcher scripts start the executors.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run_cluster_app(app: str, out: Path, *args: str, timeout: float = 1500) -> dict:
    """Runs it/apps/`app` with OUT_DIR `out` and `args`; it must print "<APP>-OK" last and write
    out/records.json (with its "app_id"). Returns the records; the app's stderr is left in out/app.stderr."""
    import pyspark

    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
    env.update(
        SPARK_HOME=str(Path(pyspark.__file__).parent),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    result = subprocess.run(
        [sys.executable, str(ROOT / "it/apps" / app), str(out), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=out,
    )
    marker = Path(app).stem.upper().replace("_", "-") + "-OK"
    (out / "app.stderr").write_text(result.stderr)  # the driver's log, for tests that check a warning
    assert result.returncode == 0 and marker in result.stdout, result.stdout[-3000:] + result.stderr[-8000:]
    records = json.loads((out / "records.json").read_text())
    # local-cluster's workers keep executor directories (logs, fetched jars) under SPARK_HOME/work
    # (an app that runs several applications records each id under a key ending in "app_id")
    for key in [k for k in records if k.endswith("app_id")]:
        shutil.rmtree(Path(env["SPARK_HOME"]) / "work" / records[key], ignore_errors=True)
    return records
