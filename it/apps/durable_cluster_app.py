"""A durable State on local-cluster[2,1,1024]: an update stream into it and a fetch-join stream out of
it (Parquet file sink), both checkpointed. it/test_cluster_durability.py kills one executor JVM with
kill -9 mid-stream; the streams must go on (Spark retries the failed tasks, the lost executor's State
partitions are rebuilt on a live one) and end with the oracle's answers.

usage: durable_cluster_app.py WORKDIR STATE EXPECTED_ROWS PROBES_JSON

Writes WORKDIR/started.json (application id, partition owners) once the State exists, then, when
the output holds EXPECTED_ROWS rows and both queries are drained, WORKDIR/joined.parquet and
WORKDIR/final.json (answers at PROBES_JSON, progress, owners and the partition moves, the rejected
table as late_updates() reads it, and the root's owner lease files while the application runs, with
spark.sharedstate.owner.lease at 6 seconds).
"""

from __future__ import annotations

import json
import secrets
import sys
import time
from pathlib import Path

import pandas as pd

import sharedstate as ss
from sharedstate.testing.adcamp import EVENT_SCHEMA, UPDATE_SCHEMA
from sharedstate.testing.streams import wait_for_rows


def describe(spark, name: str) -> dict:
    return ss.State.get(spark, name).describe()


def read_lease(path: Path) -> dict:
    """A lease file; its owner rewrites it in place when renewing, so an empty read is tried again."""
    for _ in range(40):
        try:
            return json.loads(path.read_text())
        except ValueError:
            time.sleep(0.05)
    raise AssertionError(f"unreadable lease file {path}")


def main(workdir: Path, name: str, expected_rows: int, probes: list[str]) -> None:
    spark = ss.session(
        "durable-cluster-app",
        master="local-cluster[2,1,1024]",
        **{
            "spark.sharedstate.root": str(workdir / "root"),
            "spark.sharedstate.snapshot.interval": "0",
            "spark.sql.shuffle.partitions": "2",
            "spark.driver.memory": "1g",
            "spark.sharedstate.owner.lease": "6 seconds",
            "spark.authenticate": "true",
            "spark.authenticate.secret": secrets.token_hex(16),
        },
    )
    state = ss.State.create(spark, name, key="ad_id STRING", value="campaign STRING", partitions=4)
    created_ms = int(time.time() * 1000)
    (workdir / "started.json").write_text(
        json.dumps({"app_id": spark.sparkContext.applicationId, "hosts": describe(spark, name)["hosts"]})
    )
    updates = spark.readStream.schema(UPDATE_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(workdir / "updates"))
    writer = (
        updates.writeStream.format("sharedstate")
        .option("state", name)
        .option("key", "ad_id")
        .option("time", "ts")
        .option("lateness", "20 seconds")
        .option("checkpointLocation", str(workdir / "ck-updates"))
        .trigger(processingTime="400 milliseconds")
        .start()
    )
    events = spark.readStream.schema(EVENT_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(workdir / "events"))
    # lateness: its progress is F (events arrive at most 20 s out of order, so none is late)
    joined = ss.fetch_join(events, name, key="ad_id", time="ts", how="left", lateness="30 seconds")
    reader = (
        joined.writeStream.format("parquet")
        .option("path", str(workdir / "out"))
        .option("checkpointLocation", str(workdir / "ck-events"))
        .trigger(processingTime="400 milliseconds")
        .start()
    )

    # the change stream through the per-host feeds, across the kill (Parquet file sink: exactly-once)
    changes = (
        state.changes()
        .writeStream.format("parquet")
        .option("path", str(workdir / "changes"))
        .option("checkpointLocation", str(workdir / "ck-changes"))
        .trigger(processingTime="400 milliseconds")
        .start()
    )

    wait_for_rows(spark, workdir / "out", expected_rows, writer, reader)
    changes.processAllAvailable()
    changes.stop()
    spark.read.parquet(str(workdir / "changes")).toPandas().to_parquet(workdir / "changes.parquet")
    feeds = spark.sparkContext._jvm.io.sharedstate.spark.changes.HostChangeFeeds
    change_plans = {"host": feeds.hostFeedPlans(), "scan": feeds.scanPlansInCluster()}
    spark.read.parquet(str(workdir / "out")).toPandas().to_parquet(workdir / "joined.parquet")
    # A batch fetch of every key just below U compacts (keep_latest, lazily on access) what is below
    # min(F, U): as_of at older times must come from the Delta tables.
    top = pd.Timestamp(state.progress()["update"]).tz_convert("UTC").tz_localize(None) - pd.Timedelta(seconds=1)
    probe = spark.createDataFrame(
        [(r.ad_id, top.to_pydatetime()) for r in state.as_of().collect()], "ad_id STRING, ts TIMESTAMP"
    )
    ss.fetch_join(probe, name, key="ad_id", time="ts").count()
    progress = state.progress()
    raw = json.loads(spark.sparkContext._jvm.io.sharedstate.spark.SharedStateApi.progress(state._jstate))
    owner_dir = workdir / "root" / name / "owner"
    lease = {
        "created_ms": created_ms,
        "now_ms": int(time.time() * 1000),
        "files": {p.name: read_lease(p) for p in sorted(owner_dir.glob("*.json"))},
    }
    late = [
        [r.ad_id, pd.Timestamp(r.ts).isoformat(), r.reason]
        for r in state.late_updates().selectExpr("key.ad_id AS ad_id", "time AS ts", "reason").collect()
    ]
    result = {
        "app_id": spark.sparkContext.applicationId,
        "lease": lease,
        "late": late,
        "fetch": raw["fetch"],
        "fetch_is": raw["fetch_is"],
        "update_micros": raw["update"],
        "pairs_compacted": progress["pairs_compacted"],
        "as_of": {t: sorted([r.ad_id, r.campaign] for r in state.as_of(t).collect()) for t in probes},
        "update": str(progress["update"]),
        "updates_rejected": progress["updates_rejected"],
        "updates_applied": progress["updates_applied"],
        "described": describe(spark, name),
        "change_plans": change_plans,
    }
    (workdir / "final.json").write_text(json.dumps(result))
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4]))
