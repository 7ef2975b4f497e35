"""Runs on local-cluster[2,1,1024] (two executor JVMs, spark.authenticate on) and records what the
queries produced; it/test_cluster.py checks the records against the offline oracles.

usage: cluster_app.py OUT_DIR SEED
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pandas as pd
from pyspark.sql import functions as F

import sharedstate as ss
from app_support import adcamp_joined, adcamp_writer, cluster_session
from sharedstate.testing.adcamp import EVENT_SCHEMA, UPDATE_SCHEMA, make_workload, to_spark_parquet, write_batches
from sharedstate.testing.streams import wait_until

out = Path(sys.argv[1])
seed = int(sys.argv[2])
spark = cluster_session("sharedstate-cluster-it")


def save(name: str, frame: pd.DataFrame) -> None:
    frame.to_parquet(out / f"{name}.parquet")


records: dict = {"app_id": spark.sparkContext.applicationId}

# ---- 1. a writer and a fetch join at once on randomised out-of-order input --------------------
work = make_workload(seed)
write_batches(out / "updates", work.update_batches)
write_batches(out / "events", work.event_batches)
state = ss.State.create(spark, "campaigns", key="ad_id STRING", value="campaign STRING", partitions=4)
records["hosts"] = state.hosts
writer = adcamp_writer(spark, out)
joined = adcamp_joined(spark, out)
reader = (
    joined.writeStream.format("memory")
    .queryName("joined")
    .outputMode("append")
    .option("checkpointLocation", str(out / "ck-events"))
    .trigger(processingTime="300 milliseconds")
    .start()
)

# the change stream while the writer runs, through the per-host feeds: each batch's rows per input
# partition, by batch id (a batch run again after the restart below replaces its first run)
host_batches: dict = {}


def keep_batch(df, batch_id: int) -> None:
    host_batches[batch_id] = [
        [(r["ad_id"], r["campaign"], r["campaigns_time"]) for r in part] for part in df.rdd.glom().collect()
    ]


def start_host_changes():
    return (
        state.changes()
        .writeStream.foreachBatch(keep_batch)
        .option("checkpointLocation", str(out / "ck-host-changes"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )


# The change stream is a reader: its commits advance F, and sharedstate_fetch below reads as of
# early times. A reader that never reports holds F where it is until then.
coordinator = spark._jvm.io.sharedstate.spark.cluster.Coordinator.get()
coordinator.state("campaigns").registerReader("it-holds-f")
host_changes = start_host_changes()


def some_changes() -> bool:
    if host_changes.exception() is not None:
        raise AssertionError(f"query failed: {host_changes.exception()}")
    return any(any(parts) for parts in host_batches.values())


# a restart from the checkpoint once changes flow: offsets are U, so each change is still delivered once
wait_until(some_changes, 600, "a change batch")
host_changes.stop()
records["host_batches_before_restart"] = sorted(host_batches)
host_changes = start_host_changes()


def all_joined() -> bool:
    for q in (writer, reader, host_changes):
        if q.exception() is not None:
            raise AssertionError(f"query failed: {q.exception()}")
    return spark.table("joined").count() >= len(work.events)


wait_until(all_joined, 600, "every event joined")
# once the input is processed and U stops, both queries go idle; nothing more may be emitted
writer.processAllAvailable()
reader.processAllAvailable()
save("joined", spark.table("joined").toPandas())
writer.stop()
reader.stop()
host_changes.processAllAvailable()
host_changes.stop()
save(
    "host_changes",
    pd.DataFrame(
        [
            (b, p, i, *row)
            for b, parts in sorted(host_batches.items())
            for p, rows in enumerate(parts)
            for i, row in enumerate(rows)
        ],
        columns=["batch", "input_partition", "index", "ad_id", "campaign", "campaigns_time"],
    ),
)
records["host_batch_partitions"] = {b: len(parts) for b, parts in host_batches.items()}
feeds = spark._jvm.io.sharedstate.spark.changes.HostChangeFeeds
records["change_plans"] = {"host": feeds.hostFeedPlans(), "scan": feeds.scanPlansInCluster()}
records["progress"] = {
    k: (str(v) if k in ("update", "fetch") else v) for k, v in state.progress().items() if k != "writers"
}
save("late", state.late_updates().selectExpr("key.ad_id AS ad_id", "time AS ts", "reason").toPandas())
for seconds in (45, 200, 599):
    save(f"asof_{seconds}", state.as_of(pd.Timestamp(seconds, unit="s").strftime("%Y-%m-%d %H:%M:%S")).toPandas())
# the change stream: every partition's final pairs, read where they are hosted
changes = (
    state.changes()
    .writeStream.format("memory")
    .queryName("changes")
    .option("checkpointLocation", str(out / "ck-changes"))
    .start()
)
changes.processAllAvailable()
changes.stop()
save("changes", spark.table("changes").toPandas())
# the SQL function, evaluated in tasks on both executors (every event time is below U by now)
spark.read.schema(EVENT_SCHEMA).parquet(str(out / "events")).createOrReplaceTempView("events")
save(
    "sql",
    spark.sql("SELECT event_id, sharedstate_fetch('campaigns', ad_id, ts) AS v FROM events")
    .selectExpr("event_id", "v.campaign AS campaign", "v.campaigns_time AS value_time")
    .toPandas(),
)
coordinator.state("campaigns").deregisterReader("it-holds-f")

# ---- 2. a writer that restarts from its checkpoint, and a new writer that holds U back ----------
ss.State.create(spark, "restart", key="ad_id STRING", value="campaign STRING", partitions=4)


def frame(seconds: list[int], tag: str) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "ad_id": [f"ad{i % 5}" for i in range(len(seconds))],
            "ts": pd.to_datetime(seconds, unit="s", utc=True),
            "campaign": [tag] * len(seconds),
        }
    )


def start_writer(directory: str, checkpoint: str, slow_seconds: int = 0):
    stream = spark.readStream.schema(UPDATE_SCHEMA).parquet(str(out / directory))
    if slow_seconds:
        # A writer whose first batch takes long: it registers when the batch is planned and commits
        # when it ends, so the time in between shows whether it holds U back.
        # (a JVM-side sleep: Thread.sleep through reflect, whose "null" result is cut to "")
        stream = stream.withColumn(
            "campaign",
            F.expr(
                "concat(campaign, substr(reflect('java.lang.Thread', 'sleep', "
                f"CAST({slow_seconds * 1000} AS BIGINT)), 1, 0))"
            ),
        )
    return (
        stream.writeStream.format("sharedstate")
        .option("state", "restart")
        .option("key", "ad_id")
        .option("time", "ts")
        .option("checkpointLocation", str(out / checkpoint))
        .start()
    )


def progress() -> dict:
    p = ss.State.get(spark, "restart").progress()
    return {
        "update": None if p["update"] is None else p["update"].timestamp(),
        "writers": {w: None if t is None else t.timestamp() for w, t in p["writers"].items()},
    }


def add_file(directory: str, data: pd.DataFrame, name: str) -> None:
    to_spark_parquet(data, out / directory / f"{name}.parquet")


restart: dict = {}
(out / "w1").mkdir()
(out / "w2").mkdir()
add_file("w1", frame([10, 20, 30], "a"), "a")
w1 = start_writer("w1", "ck-w1")
w1.processAllAvailable()
restart["query_id"] = w1.id
restart["first_run"] = w1.runId
restart["after_first_run"] = progress()
w1.stop()
restart["after_stop"] = progress()
w1 = start_writer("w1", "ck-w1")
restart["second_run"] = w1.runId
restart["after_restart"] = progress()
add_file("w1", frame([40, 50, 60], "b"), "b")
w1.processAllAvailable()
restart["after_more_input"] = progress()
add_file("w2", frame([100], "d"), "d")
w2 = start_writer("w2", "ck-w2", slow_seconds=25)  # w1 below needs a few seconds of it
wait_until(lambda: len(progress()["writers"]) == 2, 60, "the second writer to register")
restart["second_writer_id"] = w2.id
restart["after_second_writer_starts"] = progress()
add_file("w1", frame([70, 80, 90], "c"), "c")
w1.processAllAvailable()
restart["first_writer_moves_on"] = progress()
restart["second_writer_had_committed"] = w2.lastProgress is not None
w2.processAllAvailable()
restart["second_writer_commits"] = progress()
w1.stop()
w2.stop()
records["restart"] = restart

(out / "records.json").write_text(json.dumps(records, default=str))
spark.stop()
print("CLUSTER-APP-OK")
