"""ss.session() resolves Delta once into the cache and starts Spark with plain jars: the first start in
a fresh cache prints one progress line, a second start prints nothing Ivy-like."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# What Spark's Ivy prints when it resolves at start: its report, and warnings about unreachable hosts.
IVY_LIKE = (":: ", "resolving dependencies", "UNRESOLVED", "unreachable", "UnknownHost", "Ivy Default Cache")

START = """
import json, sharedstate as ss
spark = ss.session("quiet-start", master="local[1]")
jvm = spark.sparkContext._jvm
loader = jvm.Thread.currentThread().getContextClassLoader()
delta = jvm.java.lang.Class.forName("io.delta.tables.DeltaTable", False, loader).getName()
print("RESULT " + json.dumps({"jars": spark.conf.get("spark.jars").split(","), "delta": delta,
                              "packages": spark.conf.get("spark.jars.packages", "")}))
spark.stop()
"""


def _start(tmp_path: Path) -> subprocess.CompletedProcess:
    # a user's console: no submit arguments, and no JVM options of the test run (the JVM announces those)
    env = {k: v for k, v in os.environ.items() if k not in ("PYSPARK_SUBMIT_ARGS", "JAVA_TOOL_OPTIONS")}
    env["SHAREDSTATE_CACHE"] = str(tmp_path / "cache")  # a fresh cache: the first start resolves
    env.setdefault("SHAREDSTATE_IVY_DIR", str(Path(os.environ.get("SHAREDSTATE_CACHE", tmp_path)) / "ivy"))
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return subprocess.run(
        [sys.executable, "-c", START], env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600
    )


def _result(run: subprocess.CompletedProcess) -> dict:
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    return json.loads(next(line for line in run.stdout.splitlines() if line.startswith("RESULT "))[7:])


@pytest.mark.slow
def test_second_start_is_quiet_and_uses_the_resolved_jars(tmp_path):
    first = _start(tmp_path)
    first_result = _result(first)
    progress = [line for line in first.stderr.splitlines() if line.startswith("sharedstate: resolving")]
    assert progress == ["sharedstate: resolving io.delta:delta-spark_4.2_2.13:4.4.0... (once)"], first.stderr

    second = _start(tmp_path)
    result = _result(second)
    output = second.stdout + second.stderr
    assert not [marker for marker in IVY_LIKE if marker in output], output
    assert "sharedstate: resolving" not in output
    # Nothing but the JVM's own notice about the vector module Spark's launcher adds (not a log line).
    assert [line for line in second.stderr.splitlines() if "incubator modules" not in line] == []

    # Delta comes from files resolved once (no spark.jars.packages at start), the same ones both times.
    assert result == first_result
    assert result["packages"] == ""
    assert result["delta"] == "io.delta.tables.DeltaTable"
    names = [Path(j.removeprefix("file:")).name for j in result["jars"]]
    assert names[0].startswith("sharedstate-spark_2.13-")
    assert "io.delta_delta-spark_4.2_2.13-4.4.0.jar" in names
    records = list((tmp_path / "cache" / "packages").glob("*.json"))
    assert len(records) == 1
    assert json.loads(records[0].read_text())["coordinates"] == ["io.delta:delta-spark_4.2_2.13:4.4.0"]


def test_configure_resolves_delta_and_the_callers_packages_in_one_request(monkeypatch):
    from pyspark.sql import SparkSession

    import sharedstate as ss
    from sharedstate import _packages
    from sharedstate._jars import DELTA_COORDINATE, plugin_jar

    asked = []

    def fake_resolve(coordinates, excludes, repositories, ivy):
        asked.append((list(coordinates), list(excludes), list(repositories), ivy))
        return [Path("/resolved/a.jar"), Path("/resolved/b.jar")]

    monkeypatch.setattr(_packages, "resolve", fake_resolve)
    builder = SparkSession.builder.config("spark.jars", "/mine.jar").config("spark.jars.ivy", "/my-ivy")
    kafka = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
    conf = {"spark.jars.packages": "g:a:1", "spark.jars.repositories": "file:///repo"}
    conf["spark.sql.shuffle.partitions"] = 3
    options = ss.configure(builder, packages=[kafka], **conf)._options
    assert asked == [([DELTA_COORDINATE, kafka, "g:a:1"], asked[0][1], ["file:///repo"], "/my-ivy")]
    assert "io.delta:delta-storage" not in asked[0][1] and "org.slf4j:slf4j-api" in asked[0][1]
    assert options["spark.jars"] == f"/mine.jar,{plugin_jar()},/resolved/a.jar,/resolved/b.jar"
    assert "spark.jars.packages" not in options and "spark.jars.repositories" not in options
    assert options["spark.sql.shuffle.partitions"] == "3"


def test_a_resolution_is_recorded_and_redone_only_when_a_jar_is_gone(tmp_path, monkeypatch, capsys):
    from sharedstate import _packages

    jar = tmp_path / "delta.jar"
    jar.write_bytes(b"jar")
    runs = []
    monkeypatch.setenv("SHAREDSTATE_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("SHAREDSTATE_IVY_DIR", raising=False)  # (the Makefile exports one)
    monkeypatch.setattr(_packages, "_resolve_with_spark_submit", lambda request: runs.append(request) or [jar])

    assert _packages.resolve(["io.delta:delta-spark_4.2_2.13:4.4.0"]) == [jar]
    assert _packages.resolve([" io.delta:delta-spark_4.2_2.13:4.4.0", ""]) == [jar]  # the same request
    assert len(runs) == 1 and runs[0]["ivy"] == str(tmp_path / "cache" / "ivy")
    assert capsys.readouterr().err == "sharedstate: resolving io.delta:delta-spark_4.2_2.13:4.4.0... (once)\n"
    _packages.resolve(["io.delta:delta-spark_4.2_2.13:4.4.0", "g:a:1"])  # another request
    jar.unlink()
    runs.clear()
    monkeypatch.setattr(_packages, "_resolve_with_spark_submit", lambda request: runs.append(request) or [])
    assert _packages.resolve(["io.delta:delta-spark_4.2_2.13:4.4.0"]) == []
    assert len(runs) == 1
    with pytest.raises(ValueError, match="package 'io.delta:delta-spark': expected a Maven coordinate"):
        _packages.resolve(["io.delta:delta-spark"])
