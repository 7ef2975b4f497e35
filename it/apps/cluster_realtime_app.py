"""Runs on local-cluster[2,3,1024] (two executor JVMs, spark.authenticate on) with a local Kafka
broker: real-time mode across executors. An updater query (`ss.updater` as the foreach sink of a
two-partition topic: two real-time tasks, each a partition writer whose flushes are driver requests
from an executor JVM) writes a `latest` State whose partitions live on both executors, and an
enricher query calls `sharedstate_fetch` (read-committed) in its real-time projection, Kafka in and
Kafka out. Once every view is answered, a third real-time query reads the State's change stream
(one reader per executor host, on that host's change subscription) into Kafka from the earliest
change; after its first epoch a second round of updates comes, which its readers, resumed from
their checkpointed positions, emit too. (It starts after the views because it is a reader of the
State whose F follows what it read: a `sharedstate_fetch` behind that F fails, see docs/realtime.md.)
Records the updates, the views, the enriched views, the changes and the State's counters;
it/test_cluster_realtime.py checks them offline against the as-of oracle and the updates.

Slots: the updater holds 2 for its whole epoch, the enricher 1 and the change stream 2 (one per host);
3 cores per executor leave room.
With `lanes` as second argument, the queries run with spark.sharedstate.realtime.deliveryLanes=true.

usage: cluster_realtime_app.py OUT_DIR [lanes]
"""

from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

from pyspark.sql import functions as F

import sharedstate as ss
from app_support import cluster_session, finish
from sharedstate.testing.kafka import KafkaBroker
from sharedstate.testing.streams import check_running, wait_until

UPDATES, VIEWS, KEYS = 400, 300, 8
UPDATE_JSON = "ad_id STRING, ts_us BIGINT, campaign STRING"
VIEW_JSON = "event_id BIGINT, ad_id STRING, ts_us BIGINT"

out = Path(sys.argv[1])
lanes = len(sys.argv) > 2 and sys.argv[2] == "lanes"
spark = cluster_session(
    "sharedstate-cluster-realtime-it",
    master="local-cluster[2,3,1024]",
    kafka=True,
    **{"spark.sharedstate.realtime.deliveryLanes": str(lanes).lower()},
)
records: dict = {"app_id": spark.sparkContext.applicationId, "lanes": lanes}
state = ss.State.create(spark, "campaigns", key="ad_id STRING", value="campaign STRING", partitions=4)
records["hosts"] = state.hosts

# Updates and views in event-time order over one minute an hour ago; views at odd microseconds and
# updates at even ones, so no view ties with an update.
rnd = random.Random(26)
base = (int(time.time()) - 3600) * 1_000_000
span = 60_000_000
u_times = sorted(2 * t for t in rnd.sample(range(base // 2, (base + span) // 2), UPDATES))
updates = [{"ad_id": f"ad{rnd.randrange(KEYS)}", "ts_us": t, "campaign": f"c{i}"} for i, t in enumerate(u_times)]
v_times = sorted(2 * t + 1 for t in rnd.sample(range(base // 2, (base + span) // 2), VIEWS))
views = [{"event_id": i, "ad_id": f"ad{rnd.randrange(KEYS)}", "ts_us": t} for i, t in enumerate(v_times)]
# one last update per updater partition past every view, so U (the minimum over them) passes all
sentinels = [{"ad_id": f"ad{p}", "ts_us": base + span + 1_000_000, "campaign": "end"} for p in range(2)]
# the second round, for the change stream: later still, with sentinels of its own
later = [{"ad_id": f"ad{i % KEYS}", "ts_us": base + span + 2_000_000 + 2 * i, "campaign": f"r{i}"} for i in range(100)]
last = [{"ad_id": f"ad{p}", "ts_us": base + span + 4_000_000, "campaign": "end"} for p in range(2)]


def read(kafka, topic: str, schema: str):
    return (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .select(F.from_json(F.col("value").cast("string"), schema).alias("r"))
        .select("r.*")
        .withColumn("ts", F.timestamp_micros("ts_us"))
    )


with KafkaBroker() as kafka:
    kafka.create_topic("updates", partitions=2)
    kafka.create_topic("views", partitions=1)
    kafka.create_topic("enriched", partitions=1)
    kafka.create_topic("changes", partitions=1)
    updater = (
        read(kafka, "updates", UPDATE_JSON)
        .writeStream.foreach(ss.updater(spark, "campaigns", key="ad_id", time="ts", value="campaign"))
        .outputMode("update")
        .trigger(realTime="5 seconds")
        .option("checkpointLocation", str(out / "ck-updates"))
        .start()
    )
    enriched = (
        read(kafka, "views", VIEW_JSON)
        .withColumn("s", F.expr("sharedstate_fetch('campaigns', ad_id, ts)"))
        .select(
            F.col("event_id").cast("string").alias("key"),
            F.to_json(F.struct("event_id", "ad_id", "ts_us", F.col("s.campaign").alias("campaign"))).alias("value"),
        )
    )
    enricher = (
        enriched.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap)
        .option("topic", "enriched")
        .outputMode("update")
        .trigger(realTime="5 seconds")
        .option("checkpointLocation", str(out / "ck-views"))
        .start()
    )
    # in pieces, in time order: views wait in their fetches until the updates' U passes them
    for c in range(8):
        ups = updates[UPDATES * c // 8 : UPDATES * (c + 1) // 8]
        for p in range(2):
            kafka.produce("updates", [json.dumps(u) for i, u in enumerate(ups) if i % 2 == p], partition=p)
        kafka.produce("views", [json.dumps(v) for v in views[VIEWS * c // 8 : VIEWS * (c + 1) // 8]])
        time.sleep(0.5)
    for p, s in enumerate(sentinels):
        kafka.produce("updates", [json.dumps(s)], partition=p)

    def answered() -> bool:
        check_running(updater)
        check_running(enricher)
        return len({r.key for r in kafka.consume("enriched")}) >= VIEWS

    wait_until(answered, timeout=240, what="every view enriched")
    records["enriched"] = [json.loads(r.value) for r in kafka.consume("enriched")]

    changes = (
        spark.readStream.format("sharedstate")
        .option("state", "campaigns")
        .load()
        .select(
            F.lit("c").alias("key"),
            F.to_json(F.struct("ad_id", "campaign", F.unix_micros("campaigns_time").alias("ts_us"))).alias("value"),
        )
        .writeStream.format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap)
        .option("topic", "changes")
        .outputMode("update")
        .trigger(realTime="5 seconds")
        .option("checkpointLocation", str(out / "ck-changes"))
        .start()
    )

    def an_epoch() -> bool:
        check_running(changes)
        return len(changes.recentProgress) >= 1

    wait_until(an_epoch, timeout=240, what="the change stream's first epoch")
    for p in range(2):
        kafka.produce("updates", [json.dumps(u) for i, u in enumerate(later) if i % 2 == p], partition=p)
        kafka.produce("updates", [json.dumps(last[p])], partition=p)

    def all_changes() -> bool:
        check_running(changes)
        return kafka.end_offsets("changes").get(0, 0) >= len(updates) + len(sentinels) + len(later)

    wait_until(all_changes, timeout=240, what="every change U passed")
    records["changes"] = [json.loads(r.value) for r in kafka.consume("changes")]
    records["change_epochs"] = len(changes.recentProgress)
    feeds = spark._jvm.io.sharedstate.spark.changes.HostChangeFeeds
    records["change_plans"] = {"host": feeds.hostFeedPlans(), "scan": feeds.scanPlansInCluster()}
    changes.stop()
    records["writers"] = [w["writer"] for w in state.writers()]
    records["updater_id"] = str(updater.id)
    enricher.stop()
    updater.stop()
progress = state.progress()
records["updates_applied"] = progress["updates_applied"]
records["updates_waiting"] = progress["updates_waiting"]
records["updates"] = updates + sentinels + later + last
records["views"] = views
spark.stop()
finish(out, records, "CLUSTER-REALTIME-APP-OK")
