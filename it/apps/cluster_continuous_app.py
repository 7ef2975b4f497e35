"""Runs on local-cluster[2,3,1024] (two executor JVMs, spark.authenticate on): a continuous writer,
a continuous fetch join and the continuous change stream of one State at once, all fed by Spark's
rate source. Records what they produced; it/test_cluster_continuous.py checks it offline.

Why 3 cores per executor: a continuous query holds one task slot per partition for its whole life.
Here the writer has 2 partitions, the fetch join 1 and the change stream 2 (one per State
partition): 5 slots, plus 1 for the batch jobs that poll the memory sinks. local-cluster[2,1,1024]
has 2 slots and [2,2,1024] 4, so the three queries could not run at the same time on either.

The writer's update times are a function of the rate source's value v (base + v * step, a little
behind the wall clock), so the update history is known offline from the set of values the source emitted.

usage: cluster_continuous_app.py OUT_DIR
"""

from __future__ import annotations

import sys
import time
from datetime import timedelta
from pathlib import Path

from pyspark.sql import functions as F

import sharedstate as ss
from app_support import cluster_session, finish, key_partitions, save
from sharedstate.testing.streams import check_running, wait_until

# k = v % KEYS; a multiple of the writer's 2 partitions, so they never share a key (and 0..7 hash
# to both State partitions)
KEYS = 8
WRITER_PARTITIONS = 2
STEP_US = 50_000  # 20 rows/s -> update times advance with the wall clock,
LAG_US = 3_000_000  # 3 s behind it, so events (at the wall clock) wait for U in the pending queues
ANSWERS = 150
APPLIED = 200

out = Path(sys.argv[1])
spark = cluster_session("sharedstate-cluster-continuous-it", master="local-cluster[2,3,1024]")
records: dict = {
    "app_id": spark.sparkContext.applicationId,
    "keys": KEYS,
    "step_us": STEP_US,
    "writer_partitions": WRITER_PARTITIONS,
}
state = ss.State.create(spark, "rates", key="k BIGINT", value="v BIGINT", partitions=2)
records["hosts"] = state.hosts


def continuous(df, name: str):
    return (
        df.writeStream.format("memory")
        .queryName(name)
        .option("checkpointLocation", str(out / f"ck-{name}"))
        .trigger(continuous="300 milliseconds")
        .start()
    )


# events first: they wait in the owners' pending queues until the writer's U passes them
events = (
    spark.readStream.format("rate")
    .option("rowsPerSecond", 10)
    .option("numPartitions", 1)
    .load()
    .select(F.col("value").alias("event_id"), (F.col("value") % KEYS).alias("k"), F.col("timestamp").alias("ts"))
)
fetcher = continuous(ss.fetch_join(events, "rates", key="k", time="ts", continuous=True), "joined")
changes = continuous(state.changes(), "changes")
base_us = int(time.time() * 1_000_000)
records["base_us"] = base_us - LAG_US  # the time of value 0
updates = (
    spark.readStream.format("rate")
    .option("rowsPerSecond", 20)
    .option("numPartitions", WRITER_PARTITIONS)
    .load()
    .select(
        (F.col("value") % KEYS).alias("k"),
        F.timestamp_micros(F.lit(base_us - LAG_US) + F.col("value") * STEP_US).alias("ts"),
        F.col("value").alias("v"),
    )
)
writer = (
    updates.writeStream.format("sharedstate")
    .option("state", "rates")
    .option("key", "k")
    .option("time", "ts")
    .option("value", "v")
    .option("lateness", "2 seconds")
    .option("checkpointLocation", str(out / "ck-writer"))
    .trigger(continuous="300 milliseconds")
    .start()
)
queries = [fetcher, changes, writer]
timeline: list = []  # (seconds since the writer started, U, pending fetches, answers, newest answered event)


def enough() -> bool:
    check_running(*queries)
    p = state.progress()  # cheap (no Spark job): sampled often, to see events wait
    answered, newest = None, None
    if p["updates_applied"] >= APPLIED:
        answered, newest = spark.table("joined").agg(F.count("*"), F.max("ts")).collect()[0]
    timeline.append(
        (round(time.time() - base_us / 1e6, 1), str(p["update"]), p["pending_fetches"], answered, str(newest))
    )
    return answered is not None and answered >= ANSWERS


wait_until(enough, 300, f"{ANSWERS} answered events and {APPLIED} applied updates", interval=0.2)
# Update times run 5 s (lag + lateness) behind the events', so once the join keeps up with its
# input, events wait in the pending queues; sample a little longer if no poll has seen one yet.
deadline = time.monotonic() + 30
while max(t[2] for t in timeline) == 0 and time.monotonic() < deadline:
    timeline.append((round(time.time() - base_us / 1e6, 1), None, state.progress()["pending_fetches"], None, None))
    time.sleep(0.2)
records["timeline"] = timeline
records["pending_max"] = max(t[2] for t in timeline)
writer.stop()
progress = state.progress()  # a stopped writer keeps its progress: U stays here
u = progress["update"]
records["progress"] = {
    k: (str(v) if k in ("update", "fetch") else v) for k, v in progress.items() if k not in ("writers", "readers")
}
# Every pair the State holds below U, read back by a batch range fetch just below U, while the
# running fetch join still holds F (the change stream's F follows its offset, and compaction may
# drop older versions once nothing holds F back).
probe = spark.createDataFrame([(k, u - timedelta(microseconds=1)) for k in range(KEYS)], "k BIGINT, ts TIMESTAMP")
held = ss.fetch_join(probe, "rates", key="k", time="ts", rule="range", window="1 day").toPandas()
fetcher.stop()
save(
    out,
    "held",
    held.explode("rates_range")
    .dropna(subset=["rates_range"])
    .assign(
        ts=lambda d: d["rates_range"].map(lambda p: p["rates_time"]), v=lambda d: d["rates_range"].map(lambda p: p["v"])
    )[["k", "ts", "v"]]
    .reset_index(drop=True),
)


def changes_caught_up() -> bool:
    check_running(changes)
    return spark.table("changes").count() >= progress["updates_applied"]


wait_until(changes_caught_up, 120, f"{progress['updates_applied']} changes")
time.sleep(2)  # anything delivered twice would show up by now
check_running(changes)
changes.stop()
save(out, "joined", spark.table("joined").toPandas())
save(out, "changes", spark.table("changes").toPandas())
save(
    out,
    "late",
    state.late_updates().selectExpr("key.k AS k", "time AS ts", "value.v AS v", "reason", "update_progress").toPandas(),
)
save(out, "key_partitions", key_partitions(state, "k"))
feeds = spark._jvm.io.sharedstate.spark.changes.HostChangeFeeds
records["change_plans"] = {"host": feeds.hostFeedPlans(), "scan": feeds.scanPlansInCluster()}
finish(out, records, "CLUSTER-CONTINUOUS-APP-OK")
spark.stop()
