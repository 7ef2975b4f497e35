"""Durable States: their Delta tables under a root survive the application. A second application
(a subprocess: its own JVM) opened on the same root rebuilds the State from the changelog and holds
exactly what the first held, which equals the offline oracle over the accepted updates."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

import sharedstate as ss
from sharedstate.testing.adcamp import UPDATE_SCHEMA, accepted_updates, expected_late, make_workload, write_batches

READER = Path(__file__).with_name("durable_reader.py")


def read_in_new_application(root: Path, name: str, probes: list[str], out: Path) -> dict:
    subprocess.run(
        [sys.executable, str(READER), str(root), name, json.dumps(probes), str(out)], check=True, timeout=600
    )
    return json.loads(out.read_text())


def oracle_as_of(accepted: pd.DataFrame, t: pd.Timestamp) -> list[list[str]]:
    upto = accepted[accepted["ts"] <= t].sort_values("ts").groupby("ad_id").tail(1)
    return sorted([a, c] for a, c in zip(upto["ad_id"], upto["campaign"]))


def stream_updates(spark, work, name: str, workdir: Path) -> None:
    write_batches(workdir / "updates", work.update_batches)
    q = (
        spark.readStream.schema(UPDATE_SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .parquet(str(workdir / "updates"))
        .writeStream.format("sharedstate")
        .option("state", name)
        .option("key", "ad_id")
        .option("time", "ts")
        .option("lateness", f"{work.lateness_us // 1_000_000} seconds")
        .option("checkpointLocation", str(workdir / "ck"))
        .start()
    )
    q.processAllAvailable()
    q.stop()


def test_a_new_application_recovers_the_state_from_its_root(spark, workdir, state_name):
    work = make_workload(seed=11, keys=15, changes_per_key=8, late_fraction=0.1)
    root = workdir / "root"
    state = ss.State.create(
        spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=3, root=str(root)
    )
    stream_updates(spark, work, state_name, workdir)

    late = expected_late(work)
    assert len(late) > 0, "the workload must have late updates for this test to mean anything"
    progress = state.progress()
    u = pd.Timestamp(progress["update"])
    accepted = accepted_updates(work)
    probes = [str(t) for t in (u - pd.Timedelta(seconds=s) for s in (1, 90, 300, 600))]
    here = {t: sorted([r.ad_id, r.campaign] for r in state.as_of(t).collect()) for t in probes}

    there = read_in_new_application(root, state_name, probes, workdir / "recovered.json")
    for t in probes:
        assert here[t] == oracle_as_of(accepted, pd.Timestamp(t)), t
        assert there["as_of"][t] == here[t], t
    assert pd.Timestamp(there["update"]) == u
    assert there["updates_rejected"] == progress["updates_rejected"] == len(late)
    assert sorted(map(tuple, (x[:2] for x in there["late"]))) == sorted(
        (a, str(pd.Timestamp(t).tz_convert(None))) for a, t in zip(late["ad_id"], late["ts"])
    )
    assert {x[2] for x in there["late"]} == {"late"}
    assert (root / state_name / "changelog" / "_delta_log").is_dir()
    assert (root / state_name / "metadata" / "_delta_log").is_dir()


def test_a_state_whose_changelog_was_deleted_does_not_reopen_empty(spark, workdir, state_name):
    work = make_workload(seed=5, keys=6, changes_per_key=3, late_fraction=0.0)
    root = workdir / "root"
    ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=2, root=str(root))
    stream_updates(spark, work, state_name, workdir)
    changelog = root / state_name / "changelog"
    shutil.rmtree(changelog)

    failed = subprocess.run(
        [sys.executable, str(READER), str(root), state_name, "[]", str(workdir / "never.json")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert failed.returncode != 0
    assert f"State '{state_name}': its changelog table at" in failed.stderr
    assert "is missing: it should hold every update" in failed.stderr
    assert not changelog.exists(), "nothing is re-created over the missing table"
    assert not (workdir / "never.json").exists()


def test_creating_a_durable_state_again_checks_its_definition(spark, workdir, state_name):
    root = str(workdir / "root")
    ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=2, root=root)
    again = ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=2, root=root)
    assert again.partitions == 2
    with pytest.raises(Exception, match="already exists"):
        ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=5, root=root)


@pytest.mark.parametrize("bad", ["../escape", "a/b", "..", "", "x.y"])
def test_state_names_cannot_leave_the_root(spark, workdir, bad):
    with pytest.raises(Exception, match="Invalid State name"):
        ss.State.create(spark, bad, key="k STRING", value="v STRING", root=str(workdir / "root"))


def test_a_read_never_takes_the_lease(spark, workdir, state_name):
    """A durable State reached first by a read (not open in this application) is opened read-only:
    the read does not make this application the root's owner."""
    work = make_workload(seed=8, keys=5, changes_per_key=2, late_fraction=0.0)
    root = workdir / "root"
    state = ss.State.create(
        spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=2, root=str(root)
    )
    stream_updates(spark, work, state_name, workdir)
    before = sorted((r.ad_id, r.campaign) for r in state.as_of().collect())
    state.drop()  # forgotten here (its lease let go); its tables stay under the root
    spark.conf.set("spark.sharedstate.root", str(root))
    try:
        rows = spark.read.format("sharedstate").option("state", state_name).load().collect()
        assert sorted((r.ad_id, r.campaign) for r in rows) == before
        opened = ss.State.get(spark, state_name)
        assert opened.read_only, "the read opened the State read-only"
        with pytest.raises(ss.SharedStateError, match="open read-only"):
            ss.State.get(spark, state_name, read_only=False)
        opened.drop()
        # opened for writing (State.get), it is owned again
        assert not ss.State.get(spark, state_name).read_only
    finally:
        spark.conf.unset("spark.sharedstate.root")
