"""Elasticity on the container cluster (it/containers.py: a Spark standalone master and workers in
containers, the driver spark-submit on the host): during a steady AdCamp run (a writer, a fetch join
and a change stream on an in-memory or a durable State), a worker is added (its executor joins and
the State is rebalanced onto it) and a worker is decommissioned the way an operator does it, SIGPWR
to the worker with `spark.decommission.enabled` (its executor hands its partitions over before it
leaves: the in-memory State loses nothing). Every fetch-join row equals the offline as-of oracle,
each event once; the change stream has every applied pair exactly once; late updates and keys are
counted once.

The application is it/apps/containers_elastic_app.py; it and this test meet through files in the
directory every container shares.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from containers import (
    Containers,
    StandaloneCluster,
    docker_problem,
    driver_env,
    ensure_images,
    fresh_plugin_in,
    spark_submit_command,
)
from sharedstate.testing.adcamp import accepted_updates, comparable, expected_late, make_workload, oracle, utc

ROOT = Path(__file__).resolve().parents[1]
APPS = ROOT / "it/apps"
SEED = 2047


def workload():
    return make_workload(SEED, keys=40, changes_per_key=8, events=1500)


@pytest.fixture(scope="module")
def images() -> dict[str, str]:
    problem = docker_problem()
    if problem:
        pytest.fail(problem)  # never a silent skip: CI must run these
    return ensure_images()


def wait_for_file(path: Path, app: subprocess.Popen, log: Path, timeout: float) -> dict:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert app.poll() is None, f"the driver ended before {path.name}: " + log.read_text()[-8000:]
        assert time.monotonic() < deadline, f"no {path.name} in {timeout:.0f} s: " + log.read_text()[-8000:]
        time.sleep(0.3)
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def cluster(images, tmp_path_factory):
    """One master and two workers that honour decommissioning; both runs use it (the second on the
    workers the first left: a decommissioned worker takes no executors any more)."""
    shared = tmp_path_factory.mktemp("containers-elastic")
    containers = Containers()
    try:
        cluster = StandaloneCluster(containers, images["spark"], secrets.token_hex(16), [shared], decommission=True)
        cache = os.environ.get("SHAREDSTATE_CACHE")
        ivy = Path(cache) / "ivy-containers" if cache else shared / "ivy"
        fresh_plugin_in(ivy)
        home = shared / "home"
        home.mkdir()
        yield cluster, shared, {"spark.jars.ivy": str(ivy)}, driver_env(home)
    finally:
        containers.remove_all()


@pytest.fixture(scope="module", params=["memory", "durable"])
def elastic_run(request, cluster):
    kind = request.param
    cluster, shared, ivy, env = cluster
    out = shared / kind
    out.mkdir()
    started = time.monotonic()
    active = [i for i in range(len(cluster.workers)) if i not in cluster.decommissioned]
    assert len(active) == 2, active
    conf = {
        **ivy,
        "spark.decommission.enabled": "true",
        # a decommissioned executor lingers this long before it exits (Spark's own test setting): the
        # hand-over does not need it, it keeps the test independent of how busy the machine is
        "spark.test.executor.decommission.initial.sleep.millis": "3000",
        # room for a third executor: the application takes the added worker's cores
        "spark.cores.max": "6",
        "spark.scheduler.minRegisteredResourcesRatio": "0.6",
        "spark.sharedstate.executors": "2",
    }
    if kind == "durable":
        conf["spark.sharedstate.root"] = str(out / "root")
    command = spark_submit_command(cluster, APPS / "containers_elastic_app.py", str(out), str(SEED), kind, conf=conf)
    log = out / "driver.log"
    with log.open("w") as sink:
        app = subprocess.Popen(command, env=env, cwd=out, stdout=sink, stderr=subprocess.STDOUT)
    try:
        steady = wait_for_file(out / "steady.json", app, log, 600)
        added_index = cluster.add_worker()
        added = wait_for_file(out / "added.json", app, log, 600)
        app_id = steady["app_id"]
        # one of the first two workers goes: its executor hosts partitions now
        leaving_worker, leaving = next(
            (i, e) for i in active for e in cluster.executor_ids(i, app_id) if e in added["hosts"]
        )
        cluster.decommission_worker(leaving_worker)
        decommissioned = wait_for_file(out / "decommissioned.json", app, log, 600)
        app.wait(timeout=900)
    finally:
        if app.poll() is None:
            app.kill()
    assert app.returncode == 0 and "CONTAINERS-ELASTIC-APP-OK" in log.read_text(), log.read_text()[-8000:]
    print(f"containers elastic run ({kind}): {time.monotonic() - started:.0f} s")
    return {
        "out": out,
        "records": json.loads((out / "records.json").read_text()),
        "steady": steady,
        "added": added,
        "decommissioned": decommissioned,
        "leaving": leaving,
        "joined": cluster.executor_ids(added_index, app_id),
        "worker_log": cluster.workers[leaving_worker].get_wrapped_container().logs().decode(errors="replace"),
    }


@pytest.mark.slow
def test_partitions_move_to_an_added_worker_and_away_from_a_decommissioned_one(elastic_run):
    r = elastic_run["records"]
    first = set(elastic_run["steady"]["hosts"])
    assert len(first) == 2 and "driver" not in first, first
    # the added worker's executor joined and took its share of the partitions
    assert len(elastic_run["joined"]) == 1, elastic_run["joined"]
    joined = elastic_run["joined"][0]
    after_added = elastic_run["added"]["hosts"]
    assert set(after_added) == first | {joined} and sorted(after_added.count(h) for h in set(after_added)) == [2, 3, 3]
    # the worker was told to decommission (SIGPWR), and its executor handed everything over before it left
    assert "ecommission" in elastic_run["worker_log"], elastic_run["worker_log"][-3000:]
    leaving = elastic_run["leaving"]
    after = elastic_run["decommissioned"]["hosts"]
    assert leaving not in after and set(after) == (first | {joined}) - {leaving}
    assert sorted(after.count(h) for h in set(after)) == [4, 4]
    reasons = {m["reason"] for m in r["moves"]}
    assert {"executor added", "decommission"} <= reasons and "lost" not in reasons, r["moves"]
    handed = [p for m in r["moves"] if m["reason"] == "decommission" for p in m["partitions"]]
    assert sorted(handed) == [p for p, h in enumerate(after_added) if h == leaving]


@pytest.mark.slow
def test_fetch_join_rows_equal_the_as_of_oracle_across_the_changes(elastic_run):
    work = workload()
    got = pd.read_parquet(elastic_run["out"] / "joined.parquet").rename(columns={"campaigns_time": "value_time"})
    expected = oracle(work.events, accepted_updates(work), time_column="value_time")
    assert got["event_id"].is_unique, "an event was emitted twice"
    assert len(got) == len(work.events)
    pd.testing.assert_frame_equal(comparable(got), comparable(expected), check_dtype=False)


@pytest.mark.slow
def test_change_stream_has_each_applied_pair_once(elastic_run):
    r = elastic_run["records"]
    u = pd.Timestamp(r["update"])
    history = accepted_updates(workload()).assign(ts=lambda d: utc(d["ts"]))
    want = sorted(zip(*(history[history["ts"] < u][c] for c in ("ad_id", "campaign", "ts"))))
    got = pd.read_parquet(elastic_run["out"] / "changes.parquet")
    rows = sorted(zip(got["ad_id"], got["campaign"], utc(got["campaigns_time"])))
    assert len(rows) == len(set(rows)), "a pair was delivered twice"
    assert rows == want


@pytest.mark.slow
def test_late_updates_and_keys_are_counted_once(elastic_run):
    r = elastic_run["records"]
    assert r["updates_rejected"] == len(expected_late(workload()))
    assert r["keys"] == 40  # the end marker waits above U: staged, not a key yet
