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
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
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
