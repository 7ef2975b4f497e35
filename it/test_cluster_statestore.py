"""Issue 22 on local-cluster[2,1,1024]: the window aggregation runs on two executor JVMs with the
shared state store, each executor's tasks publish their partitions' versions into the State (hosted
on both executors) and report to the driver, which commits each version once every partition has; a
second query fetch-joins each view with its campaign's totals as of the view time. Every output row,
the aggregation's own output (the provider's state) and the State's as-of answers equal the pandas
oracle (the same application and checks as python/tests/test_statestore_shared.py, there on
local[3]). Then the same with a durable State and one executor JVM killed (SIGKILL) mid-stream:
Spark reruns the lost tasks, the provider loads the lost executor's stores from their files on the
executor that runs them next, the State rebuilds its lost partitions from the Delta tables, and
nothing is lost or counted twice."""

from __future__ import annotations

import importlib.util
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT / "python" / "tests" / "test_statestore_shared.py"
MASTER = "local-cluster[2,1,1024]"


def shared_module():
    spec = importlib.util.spec_from_file_location("statestore_shared_app", SHARED)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def cluster_conf() -> dict:
    return {
        "spark.authenticate": "true",
        "spark.authenticate.secret": secrets.token_hex(16),
        "spark.sql.shuffle.partitions": "4",
        "spark.driver.memory": "1g",
    }


def cluster_env() -> dict:
    import pyspark

    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
    env.update(
        SPARK_HOME=str(Path(pyspark.__file__).parent),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
    )
    return env


def executors_of(pid: int) -> dict[int, list[str]]:
    """The executor JVMs started for the application process `pid` (local-cluster's workers run in
    the driver JVM, a child of `pid`, and start the executors as their children): pid -> command line."""
    parents, commands = {}, {}
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            stat = (proc / "stat").read_text()
            args = (proc / "cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        parents[int(proc.name)] = int(stat[stat.rindex(")") + 2 :].split()[1])
        commands[int(proc.name)] = [a.decode(errors="replace") for a in args]

    def descends(p: int) -> bool:
        while p in parents and p != pid:
            p = parents[p]
        return p == pid

    return {
        p: cmd
        for p, cmd in commands.items()
        if any(a.endswith("CoarseGrainedExecutorBackend") for a in cmd) and descends(p)
    }


@pytest.mark.slow
def test_cluster_window_totals_published_and_fetch_joined_equal_the_oracle(tmp_path):
    shared = shared_module()
    ev, files, vw = shared.workload(seed=4022)
    shared.write_inputs(tmp_path, files, vw)
    result = subprocess.run(
        [sys.executable, str(SHARED), str(tmp_path), MASTER, json.dumps(cluster_conf())],
        env=cluster_env(),
        capture_output=True,
        text=True,
        timeout=1200,
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-8000:]
    shared.check(tmp_path, ev, vw)


@pytest.mark.slow
def test_cluster_kill_9_of_an_executor_mid_stream_the_query_goes_on_and_equals_the_oracle(tmp_path):
    shared = shared_module()
    ev, files, vw = shared.workload(seed=4023, batches=24)
    shared.write_inputs(tmp_path, files, vw)
    conf = {**cluster_conf(), "spark.sharedstate.root": str(tmp_path / "root")}
    env = cluster_env()
    app = subprocess.Popen(
        [sys.executable, str(SHARED), str(tmp_path), MASTER, json.dumps(conf)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    app_id = None
    try:
        deadline = time.monotonic() + 600
        # Mid-stream: some versions published (each a Delta commit of the durable State), most to come.
        while shared.committed_versions(tmp_path) < 6:
            assert app.poll() is None, "the application ended before the kill: " + app.stdout.read()[-5000:]
            assert time.monotonic() < deadline, "no published version before the kill"
            time.sleep(0.2)
        executors = executors_of(app.pid)
        assert len(executors) == 2, f"two executor JVMs: {executors}"
        victim, command = sorted(executors.items())[0]
        app_id = command[command.index("--app-id") + 1]
        os.kill(victim, signal.SIGKILL)
        at_kill = shared.committed_versions(tmp_path)
        output, _ = app.communicate(timeout=1200)
    finally:
        if app.poll() is None:
            app.kill()
        if app_id:
            shutil.rmtree(Path(env["SPARK_HOME"]) / "work" / app_id, ignore_errors=True)
    assert app.returncode == 0, output[-8000:]
    assert "Lost executor" in output, "the driver never saw the executor go: " + output[-5000:]
    assert at_kill < len(files), "the kill came after the last batch"
    assert shared.committed_versions(tmp_path) > at_kill, "nothing was published after the kill"
    shared.check(tmp_path, ev, vw)
