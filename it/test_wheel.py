"""The wheel a user installs: built as `make wheel` builds it (PEP 517), installed into a fresh
virtualenv (no system site-packages, no source tree on the path), and a short fetch-join example run
there with plain `python` + pyspark from a directory outside the checkout."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import sharedstate

ROOT = Path(__file__).resolve().parents[1]

EXAMPLE = """
import json, sys
from pathlib import Path

import sharedstate as ss

source_tree = Path(sys.argv[1])
work = Path(sys.argv[2])
spark = ss.session("wheel-example", master="local[2]")
state = ss.State.create(spark, "campaigns", key="ad_id STRING", value="campaign STRING", partitions=2)
(
    spark.createDataFrame(
        [("a", "2026-01-01 00:00:10", "c1"), ("a", "2026-01-01 00:00:30", "c2"), ("b", "2026-01-01 00:00:05", "c3")],
        "ad_id STRING, ts STRING, campaign STRING",
    )
    .selectExpr("ad_id", "CAST(ts AS TIMESTAMP) AS ts", "campaign")
    .write.format("sharedstate").option("state", "campaigns").option("key", "ad_id").option("time", "ts")
    .mode("append").save()
)
views = spark.createDataFrame(
    [(1, "a", "2026-01-01 00:00:20"), (2, "a", "2026-01-01 00:00:40"), (3, "b", "2026-01-01 00:00:01"),
     (4, "z", "2026-01-01 00:00:50")],
    "id INT, ad_id STRING, ts STRING",
).selectExpr("id", "ad_id", "CAST(ts AS TIMESTAMP) AS ts")
ss.fetch_join(views, "campaigns", key="ad_id", time="ts").write.format("delta").save(str(work / "enriched"))
rows = spark.read.format("delta").load(str(work / "enriched")).orderBy("id").collect()
print("RESULT " + json.dumps({
    "rows": [[r.id, r.campaign] for r in rows],
    "sharedstate": ss.__file__,
    "version": ss.__version__,
    "jar": spark.conf.get("spark.jars").split(",")[0],
    "source_on_path": [p for p in sys.path if p and Path(p).resolve().is_relative_to(source_tree)],
}))
spark.stop()
"""


@pytest.mark.slow
def test_the_wheel_installs_and_runs_a_fetch_join(tmp_path):
    dist = tmp_path / "dist"
    build = subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert build.returncode == 0, build.stdout[-3000:] + build.stderr[-3000:]
    (wheel,) = dist.glob(f"sharedstate-{sharedstate.__version__}-py3-none-any.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    jar = f"sharedstate/jars/sharedstate-spark_2.13-{sharedstate.__version__}.jar"
    assert {jar, "sharedstate/conf/spark-defaults.conf", "sharedstate/conf/log4j2.properties"} <= names

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    python = venv / "bin" / "python"
    # Nothing of the project's environment leaks in: no PYTHONPATH, no jar override, a clean launcher.
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "SHAREDSTATE_JAR", "PYSPARK_SUBMIT_ARGS")}
    env.pop("VIRTUAL_ENV", None)
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    env.setdefault("SHAREDSTATE_CACHE", str(tmp_path / "cache"))  # Delta's jars, resolved once
    install = subprocess.run(
        [str(python), "-m", "pip", "install", "-q", str(wheel)], env=env, capture_output=True, text=True, timeout=1800
    )
    assert install.returncode == 0, install.stdout[-3000:] + install.stderr[-3000:]

    outside = tmp_path / "user"
    outside.mkdir()
    (outside / "example.py").write_text(EXAMPLE)
    run = subprocess.run(
        [str(python), "example.py", str(ROOT), str(outside)],
        env=env,
        cwd=outside,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-6000:]
    result = json.loads(next(line for line in run.stdout.splitlines() if line.startswith("RESULT "))[7:])
    # The package, its jar and its confs come from the virtualenv; nothing of the checkout is on sys.path.
    assert result["source_on_path"] == []
    assert Path(result["sharedstate"]).resolve().is_relative_to(venv.resolve()), result["sharedstate"]
    assert Path(result["jar"].removeprefix("file:")).resolve().is_relative_to(venv.resolve()), result["jar"]
    assert result["version"] == sharedstate.__version__
    # The as-of answers, read back from the Delta table the example wrote: the newest campaign at or
    # before each view's time (a: c1 from 10s, c2 from 30s; b: c3 from 5s; z: never).
    assert result["rows"] == [[1, "c1"], [2, "c2"], [3, None], [4, None]]
