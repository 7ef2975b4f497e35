"""spark-submit --packages with our Maven coordinate and nothing else set but the build's file
repository (`spark/publish` writes the pom and jar there, Maven layout; no ~/.m2): the plugin comes from
that repository, Delta from Maven Central as its dependency."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import sharedstate
from sharedstate._jars import LOCAL_REPOSITORY, MAVEN_COORDINATE

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.slow
def test_spark_submit_packages_finds_plugin_and_delta(tmp_path):
    published = LOCAL_REPOSITORY / "io/sharedstate/sharedstate-spark_2.13" / sharedstate.__version__
    assert (published / f"sharedstate-spark_2.13-{sharedstate.__version__}.pom").is_file(), (
        f"the build publishes the pom and jar to {LOCAL_REPOSITORY} (make jar and make test do)"
    )
    ivy = os.environ.get("SHAREDSTATE_CACHE", str(tmp_path)) + "/ivy-packages-it"
    # Delta stays cached between runs; the plugin is resolved afresh from the file repository.
    shutil.rmtree(Path(ivy, "cache", "io.sharedstate"), ignore_errors=True)
    for stale in Path(ivy, "jars").glob("io.sharedstate_*"):
        stale.unlink()
    import pyspark

    env = {k: v for k, v in os.environ.items() if k not in ("SHAREDSTATE_JAR", "PYSPARK_SUBMIT_ARGS")}
    env.update(
        SPARK_HOME=str(Path(pyspark.__file__).parent),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        PATH=f"{Path(sys.executable).parent}:{env.get('PATH', '')}",
        # Spark's Ivy looks in ~/.m2/repository first: a home without one shows nothing depends on it.
        SPARK_SUBMIT_OPTS=f"-Duser.home={tmp_path}",
    )
    spark_submit = Path(sys.executable).parent / "spark-submit"
    result = subprocess.run(
        [
            str(spark_submit),
            "--master",
            "local[2]",
            "--repositories",
            LOCAL_REPOSITORY.as_uri(),
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
    # Ivy found the plugin in the file repository, the first --repositories entry (repo-1).
    assert f"found io.sharedstate#sharedstate-spark_2.13;{sharedstate.__version__} in repo-1" in result.stderr
