"""A Spark standalone cluster in containers (one master, two workers, spark.authenticate on) and a
Kafka broker in a container, from the images it/images/build_images.py builds locally; the driver is
spark-submit on the host (client mode), with the plugin (from the build's file repository, no ~/.m2)
and Kafka's connector by --packages, Delta from Maven Central as the plugin's dependency.

Why the driver on the host: it is the client machine of a real deployment (the user's spark-submit),
the test reads what it records directly, and the "driver restart" is a new process there; everything
meets on 127.0.0.1 (host network).

1. A client without the application's secret (a wrong one, or none) is refused by each executor's
   State service; the same client with the secret is answered.
2. AdCamp from two Kafka topics into a durable State on a directory every container shares; SIGKILL
   of one worker container mid-stream (its executor dies with it): Spark retries, the lost State
   partitions are rebuilt on the live executor, and every output row equals the offline as-of oracle,
   each event once. Then the worker comes back and the driver restarts on the same checkpoints: the
   State reopens on both executors and answers the same; the output gains nothing.
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

import sharedstate
from containers import (
    Containers,
    KafkaBroker,
    StandaloneCluster,
    docker_problem,
    driver_env,
    ensure_images,
    fresh_plugin_in,
    spark_submit_command,
)
from sharedstate.testing.adcamp import (
    accepted_updates,
    comparable,
    expected_late,
    make_workload,
    oracle,
    to_spark_parquet,
)

ROOT = Path(__file__).resolve().parents[1]
APPS = ROOT / "it/apps"


@pytest.fixture(scope="module")
def images() -> dict[str, str]:
    problem = docker_problem()
    if problem:
        pytest.fail(problem)  # never a silent skip: CI must run these
    return ensure_images()


@pytest.fixture(scope="module")
def shared(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("containers")


@pytest.fixture(scope="module")
def deployment(images, shared):
    containers = Containers()
    try:
        cluster = StandaloneCluster(containers, images["spark"], secrets.token_hex(16), [shared])
        kafka = KafkaBroker(containers, images["kafka"])
        yield cluster, kafka
    finally:
        containers.remove_all()


@pytest.fixture(scope="module")
def submit(shared):
    """spark-submit's Ivy settings and the driver's environment (a home with no ~/.m2)."""
    cache = os.environ.get("SHAREDSTATE_CACHE")
    ivy = Path(cache) / "ivy-containers" if cache else shared / "ivy"
    fresh_plugin_in(ivy)
    home = shared / "home"
    home.mkdir()
    return {"spark.jars.ivy": str(ivy)}, driver_env(home)


@pytest.mark.slow
def test_an_executor_state_service_refuses_a_client_without_the_secret(deployment, shared, submit):
    cluster, _ = deployment
    ivy, env = submit
    out = shared / "security"
    out.mkdir()
    command = spark_submit_command(cluster, APPS / "containers_security_app.py", str(out), conf=ivy)
    result = subprocess.run(command, env=env, cwd=out, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0 and "CONTAINERS-SECURITY-APP-OK" in result.stdout, result.stderr[-8000:]
    records = json.loads((out / "records.json").read_text())
    assert "driver" not in records["hosts"] and len(set(records["hosts"])) == 2, records["hosts"]
    assert records["right_secret"] == ["answered", "answered"], records["right_secret"]
    for case in ("wrong_secret", "no_secret"):
        answers = records[case]
        assert len(answers) == 2 and all(a.startswith("refused: ") for a in answers), (case, answers)


def committed_epochs(workdir: Path) -> int:
    log = workdir / "root" / "campaigns" / "changelog" / "_delta_log"
    return len(list(log.glob("*.json"))) if log.is_dir() else 0


def output_batches(workdir: Path) -> int:
    meta = workdir / "out" / "_spark_metadata"
    return len([p for p in meta.iterdir() if p.name.isdigit()]) if meta.is_dir() else 0


def in_topic_order(batches: list[pd.DataFrame]) -> pd.DataFrame:
    """The arrival batches in order, each sorted by time, numbered: the order the topic gets. Kafka's
    micro-batches cut it anywhere (a count of records), so no update may be late whatever the cut:
    with every delay under the lateness (late_fraction=0) and each batch sorted, none is."""
    frame = pd.concat([b.sort_values("ts") for b in batches], ignore_index=True)
    return frame.assign(seq=range(len(frame)))


@pytest.mark.slow
def test_kill_of_a_worker_container_and_a_driver_restart_equal_the_oracle(deployment, shared, submit):
    cluster, kafka = deployment
    ivy, env = submit
    workdir = shared / "adcamp"
    workdir.mkdir()
    work = make_workload(seed=23, keys=15, changes_per_key=8, events=500, late_fraction=0.0)
    assert expected_late(work).empty
    to_spark_parquet(in_topic_order(work.update_batches), workdir / "updates.parquet")
    to_spark_parquet(in_topic_order(work.event_batches), workdir / "events.parquet")
    accepted = accepted_updates(work)
    expected = oracle(work.events, accepted, time_column="value_time")
    probes = [str(pd.Timestamp(s, unit="s")) for s in (60, 300, 599)]
    conf = {"spark.sharedstate.root": str(workdir / "root"), **ivy}
    args = (str(workdir), kafka.bootstrap, str(len(expected)), json.dumps(probes))
    command = spark_submit_command(cluster, APPS / "containers_adcamp_app.py", *args, conf=conf)

    log = workdir / "driver.log"
    with log.open("w") as sink:
        app = subprocess.Popen(command, env=env, cwd=workdir, stdout=sink, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 900
        started = workdir / "started.json"
        while not (started.exists() and committed_epochs(workdir) >= 4 and output_batches(workdir) >= 2):
            assert app.poll() is None, "the driver ended before the kill: " + log.read_text()[-6000:]
            assert time.monotonic() < deadline, "no progress before the kill: " + log.read_text()[-6000:]
            time.sleep(0.2)
        hosts = json.loads((workdir / "started.json").read_text())["hosts"]
        assert len(set(hosts)) == 2 and "driver" not in hosts, f"both executors host partitions: {hosts}"
        cluster.kill_worker(0)
        epochs_at_kill = committed_epochs(workdir)
        app.wait(timeout=900)
    finally:
        if app.poll() is None:
            app.kill()
    assert app.returncode == 0, log.read_text()[-8000:]
    resolution = log.read_text()
    assert f"found io.sharedstate#sharedstate-spark_2.13;{sharedstate.__version__} in repo-1" in resolution, (
        "the plugin comes from the build's file repository (the first --repositories entry)"
    )
    assert "found io.delta#delta-spark_4.2_2.13;4.4.0 in central" in resolution, "Delta comes from Maven Central"
    updates_total = -(-len(work.updates) // 8)  # micro-batches of 8 records
    assert epochs_at_kill < updates_total, "the kill came after every update was committed"
    final = json.loads((workdir / "final.json").read_text())

    # The killed worker's executor is gone from the owner map; its partitions moved to the live one.
    described = final["described"]
    lost = set(hosts) - set(described["hosts"])
    assert len(lost) == 1, (hosts, described)
    victim = lost.pop()
    moved = [p for m in described["moves"] if m["from"] == victim for p in m["partitions"]]
    assert sorted(moved) == [p for p, h in enumerate(hosts) if h == victim], described["moves"]

    def output_equals_the_oracle() -> None:
        got = pd.read_parquet(workdir / "joined.parquet")
        assert got["event_id"].is_unique, "an event was emitted twice"
        assert len(got) == len(work.events), "an event was lost"
        got = got.rename(columns={[c for c in got.columns if c.endswith("_time")][0]: "value_time"})
        pd.testing.assert_frame_equal(comparable(got), comparable(expected), check_dtype=False)

    def answers_equal_the_oracle(final: dict) -> None:
        for t in probes:
            upto = accepted[accepted["ts"] <= pd.Timestamp(t, tz="UTC")].sort_values("ts").groupby("ad_id").tail(1)
            assert final["as_of"][t] == sorted([a, c] for a, c in zip(upto["ad_id"], upto["campaign"])), t

    output_equals_the_oracle()
    answers_equal_the_oracle(final)
    assert final["updates_rejected"] == 0
    assert final["updates_applied"] == len(accepted[accepted["ts"] < pd.Timestamp(final["update"])])

    # The worker comes back; the driver restarts on the same root and checkpoints.
    cluster.replace_worker(0)
    (workdir / "final.json").unlink()
    (workdir / "started.json").unlink()
    again = subprocess.run(command, env=env, cwd=workdir, capture_output=True, text=True, timeout=900)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-8000:]
    reopened = json.loads((workdir / "final.json").read_text())
    assert reopened["app_id"] != final["app_id"]
    assert len(set(reopened["described"]["hosts"])) == 2 and reopened["described"]["moves"] == [], reopened
    assert reopened["update"] == final["update"]
    answers_equal_the_oracle(reopened)
    output_equals_the_oracle()
