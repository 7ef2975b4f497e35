"""A second application (its own process and SparkSession) opens a durable State read-only while the
first one streams into it: it follows the writer's commits from the Delta changelog, its as_of answers
below its U equal the oracle at every step, it ends at the writer's final U, and it cannot write."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

import sharedstate as ss
from sharedstate.testing.adcamp import UPDATE_SCHEMA, accepted_updates, expected_late, make_workload
from sharedstate.testing.streams import wait_until
from test_durability import oracle_as_of
from test_durability_snapshots import add_files

READER = Path(__file__).with_name("follow_reader.py")


def test_a_read_only_application_follows_the_writer_and_cannot_write(spark, workdir, state_name):
    spark.conf.set("spark.sharedstate.owner.lease", "6 seconds")
    try:
        work = make_workload(seed=17, keys=12, changes_per_key=8, late_fraction=0.1)
        root = workdir / "root"
        state = ss.State.create(
            spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=3, root=str(root)
        )
        assert not state.read_only
        reader = subprocess.Popen([sys.executable, str(READER), str(root), state_name, str(workdir)])
        try:
            wait_until(
                lambda: (workdir / "reader-ready").exists() or reader.poll() is not None,
                timeout=180,
                what="the reader application",
            )
            assert reader.poll() is None, "the reader application ended early"
            batches = work.update_batches
            add_files(workdir / "updates", batches[:1], 0)
            q = (
                spark.readStream.schema(UPDATE_SCHEMA)
                .option("maxFilesPerTrigger", 1)
                .parquet(str(workdir / "updates"))
                .writeStream.format("sharedstate")
                .option("state", state_name)
                .option("key", "ad_id")
                .option("time", "ts")
                .option("lateness", f"{work.lateness_us // 1_000_000} seconds")
                .option("checkpointLocation", str(workdir / "ck"))
                .trigger(processingTime="200 milliseconds")
                .start()
            )
            for i in range(1, len(batches)):  # the writer keeps committing while the reader follows
                time.sleep(1.5)
                add_files(workdir / "updates", batches[i : i + 1], i)
            q.processAllAvailable()
            q.stop()
            final_u = state.progress()["update"]
            (workdir / "writer-done").write_text(str(final_u))
            assert reader.wait(timeout=300) == 0
        finally:
            if reader.poll() is None:
                reader.kill()
    finally:
        spark.conf.unset("spark.sharedstate.owner.lease")

    seen = json.loads((workdir / "follow.json").read_text())
    assert seen["read_only"] is True
    accepted = accepted_updates(work)
    us = [pd.Timestamp(s["update"]) for s in seen["seen"]]
    assert us == sorted(us), "the reader's U went back"
    assert len(set(us)) >= 4, f"the reader did not follow the writer step by step: {sorted(set(us))}"
    assert us[-1] == pd.Timestamp(final_u)
    for s in seen["seen"]:
        for t, rows in s["as_of"].items():
            assert rows == oracle_as_of(accepted, pd.Timestamp(t, tz="UTC")), (s["update"], t)
    assert "is read-only in this application" in seen["errors"]["write"] and state_name in seen["errors"]["write"]
    assert "takes no snapshots" in seen["errors"]["snapshot"]
    late = expected_late(work)
    assert sorted((a, t) for a, t, _ in seen["late"]) == sorted(
        (a, str(pd.Timestamp(t).tz_convert(None))) for a, t in zip(late["ad_id"], late["ts"])
    )


def test_a_second_owner_is_refused_while_the_first_holds_the_root(spark, workdir, state_name):
    spark.conf.set("spark.sharedstate.owner.lease", "4 seconds")
    root = workdir / "root"
    ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=2, root=str(root))
    code = (
        "import sys, sharedstate as ss\n"
        f"spark = ss.session('second-owner', master='local[1]', **{{'spark.sharedstate.owner.lease': '4 seconds'}})\n"
        "try:\n"
        f"    ss.State.create(spark, {state_name!r}, key='ad_id STRING', value='campaign STRING', partitions=2,"
        f" root={str(root)!r})\n"
        "    print('OPENED')\n"
        "except Exception as e:\n"
        "    print('REFUSED', e)\n"
        "finally:\n"
        "    spark.stop()\n"
    )
    try:
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300).stdout
    finally:
        spark.conf.unset("spark.sharedstate.owner.lease")
    assert "REFUSED" in out and f"State '{state_name}'" in out and "is owned by application" in out, out
