"""spark-submit --packages with our Maven coordinate and nothing else set (the jar is published to
the local Maven repository by the build; Delta is resolved as its dependency)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import sharedstate
from sharedstate._jars import MAVEN_COORDINATE

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_spark_submit_packages_finds_plugin_and_delta(tmp_path):
    published = Path.home() / ".m2/repository/io/sharedstate/sharedstate-spark_2.13" / sharedstate.__version__
    assert published.is_dir(), "the build publishes the jar to the local Maven repository (make test does)"
    ivy = os.environ.get("SHAREDSTATE_CACHE", str(tmp_path)) + "/ivy-packages-it"
    import pyspark

    env = {k: v for k, v in os.environ.items() if k not in ("SHAREDSTATE_JAR", "PYSPARK_SUBMIT_ARGS")}
    env.update(
        SPARK_HOME=str(Path(pyspark.__file__).parent),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
    )
    spark_submit = Path(sys.executable).parent / "spark-submit"
    result = subprocess.run(
        [
            str(spark_submit),
            "--master",
            "local[2]",
            "--packages",
            MAVEN_COORDINATE,
            "--conf",
            f"spark.jars.ivy={ivy}",  # a cache of its own: resolution really happens here
            str(ROOT / "it/apps/packages_app.py"),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-6000:]
    assert "RESULT rows=[('a', 'c1'), ('b', 'c2')] delta=io.delta.tables.DeltaTable write=checked" in result.stdout
    assert any(p.name.startswith("io.sharedstate_sharedstate-spark_2.13") for p in Path(ivy, "jars").iterdir())
