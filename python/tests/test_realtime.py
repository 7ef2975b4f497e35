"""Real-time mode (trigger(realTime=...)) on a local broker: a State written by one real-time query
(ss.updater as its foreach sink) and read by another real-time query's projection
(sharedstate_fetch), Kafka in and Kafka out. Every enriched event is checked against the offline
as-of join over the update history (read-committed) or against the staleness bound
(read-uncommitted); a `sum` State written by a real-time query stopped mid-epoch and restarted from
its checkpoint holds the oracle's totals (the replayed epoch counted nothing twice), in memory and
durable (where the State rebuilt from the changelog its flushes wrote holds them too)."""

from __future__ import annotations

import bisect
import json
import random
import time
from collections import Counter, defaultdict
from datetime import datetime, timezone

import pytest
from pyspark.sql import functions as F

import sharedstate as ss
from sharedstate.testing.streams import check_running, wait_until

pytestmark = [
    pytest.mark.slow,
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]

UPDATE_JSON = "ad_id STRING, ts_us BIGINT, campaign STRING"
VIEW_JSON = "event_id BIGINT, ad_id STRING, ts_us BIGINT"
# Real-time epochs are checkpoints, not latency: the shortest Spark allows.
EPOCH = "5 seconds"


def read_topic(spark, kafka, topic: str, schema: str):
    return (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .select(F.from_json(F.col("value").cast("string"), schema).alias("r"), F.col("timestamp").alias("kafka_ts"))
        .select("r.*", "kafka_ts")
        .withColumn("ts", F.timestamp_micros("ts_us"))
    )


def start_updater(spark, kafka, topic: str, state: str, checkpoint, value: str, epoch: str = EPOCH):
    updates = read_topic(spark, kafka, topic, UPDATE_JSON)
    if value == "n":
        updates = updates.withColumn("n", F.lit(1).cast("bigint"))
    return (
        updates.writeStream.foreach(ss.updater(spark, state, key="ad_id", time="ts", value=value, lateness="0 seconds"))
        .outputMode("update")
        .trigger(realTime=epoch)
        .option("checkpointLocation", str(checkpoint))
        .start()
    )


def start_enricher(spark, kafka, topic_in: str, topic_out: str, state: str, checkpoint, staleness: str | None):
    views = read_topic(spark, kafka, topic_in, VIEW_JSON)
    fetch = (
        f"sharedstate_fetch('{state}', ad_id, ts)"
        if staleness is None
        else f"sharedstate_fetch('{state}', ad_id, ts, 'latest', null, '{staleness}')"
    )
    enriched = views.withColumn("s", F.expr(fetch)).select(
        F.col("event_id").cast("string").alias("key"),
        F.to_json(
            F.struct("event_id", "ad_id", "ts_us", F.col("s.campaign").alias("campaign"), F.col("kafka_ts"))
        ).alias("value"),
    )
    return (
        enriched.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", kafka.bootstrap)
        .option("topic", topic_out)
        .outputMode("update")
        .trigger(realTime=EPOCH)
        .option("checkpointLocation", str(checkpoint))
        .start()
    )


def workload(seed: int, n_updates: int, n_views: int, base_us: int, span_us: int):
    """Updates and views in event-time order (one partition each, lateness 0: none is late)."""
    rnd = random.Random(seed)
    keys = [f"ad{i}" for i in range(8)]
    u_times = sorted(rnd.sample(range(base_us, base_us + span_us), n_updates))
    updates = [{"ad_id": rnd.choice(keys), "ts_us": t, "campaign": f"c{i}"} for i, t in enumerate(u_times)]
    v_times = sorted(rnd.sample(range(base_us, base_us + span_us), n_views))
    views = [{"event_id": i, "ad_id": rnd.choice(keys), "ts_us": t} for i, t in enumerate(v_times)]
    return updates, views


def passed(u, micros: int) -> bool:
    """U (a UTC datetime, None at -infinity) is past `micros`."""
    return u is not None and u.replace(tzinfo=timezone.utc).timestamp() * 1e6 > micros


class AsOf:
    """The offline as-of oracle: per key, the newest update at or before a time."""

    def __init__(self, updates):
        self.by_key = defaultdict(list)
        for u in updates:
            self.by_key[u["ad_id"]].append((u["ts_us"], u["campaign"]))
        for rows in self.by_key.values():
            rows.sort()

    def at(self, key: str, t: int):
        rows = self.by_key.get(key, [])
        i = bisect.bisect_right(rows, (t, "\uffff"))
        return rows[i - 1][1] if i else None

    def values_between(self, key: str, lo: int, hi: int) -> set:
        """Every answer an as-of read at a time in [lo, hi] can give."""
        rows = self.by_key.get(key, [])
        return {self.at(key, lo)} | {c for t, c in rows if lo <= t <= hi}


def feed(kafka, topic_updates, topic_views, updates, views, chunks: int, pace_s: float):
    """Updates and views in `chunks` interleaved pieces, in time order, `pace_s` apart."""
    for c in range(chunks):
        kafka.produce(topic_updates, [json.dumps(u) for u in piece(updates, c, chunks)])
        kafka.produce(topic_views, [json.dumps(v) for v in piece(views, c, chunks)])
        time.sleep(pace_s)


def piece(rows, c: int, chunks: int):
    return rows[len(rows) * c // chunks : len(rows) * (c + 1) // chunks]


def test_realtime_enrichment_equals_oracle(spark, kafka, workdir, state_name):
    topics = {k: f"{state_name}-{k}" for k in ("updates", "views", "committed", "uncommitted")}
    for t in topics.values():
        kafka.create_topic(t, partitions=1)
    ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=4)
    base = (int(time.time()) - 3600) * 1_000_000
    span = 60_000_000
    updates, views = workload(7, n_updates=400, n_views=400, base_us=base, span_us=span)
    # The last update moves U past every view.
    sentinel = {"ad_id": "sentinel", "ts_us": base + span + 1_000_000, "campaign": "end"}
    staleness_us = 2_000_000

    writer = start_updater(spark, kafka, topics["updates"], state_name, workdir / "ck-u", "campaign")
    committed = start_enricher(spark, kafka, topics["views"], topics["committed"], state_name, workdir / "ck-c", None)
    uncommitted = start_enricher(
        spark, kafka, topics["views"], topics["uncommitted"], state_name, workdir / "ck-v", "2 seconds"
    )
    feed(kafka, topics["updates"], topics["views"], updates, views, chunks=8, pace_s=0.5)
    kafka.produce(topics["updates"], [json.dumps(sentinel)])

    def out(topic):
        return [json.loads(r.value) for r in kafka.consume(topic)]

    for topic in (topics["committed"], topics["uncommitted"]):
        wait_until(
            lambda topic=topic: (
                (check_running(writer, committed, uncommitted) or True)
                and len({r["event_id"] for r in out(topic)}) == len(views)
            ),
            timeout=120,
            what=f"every view enriched in {topic}",
        )
    oracle = AsOf(updates)
    got = {}
    for r in out(topics["committed"]):
        got.setdefault(r["event_id"], set()).add(r.get("campaign"))  # to_json leaves out nulls
    wrong = [(v, got[v["event_id"]]) for v in views if got[v["event_id"]] != {oracle.at(v["ad_id"], v["ts_us"])}]
    assert not wrong, f"{len(wrong)} committed answers differ from the as-of oracle, e.g. {wrong[:3]}"

    outside = []
    for r in out(topics["uncommitted"]):
        v = views[r["event_id"]]
        allowed = oracle.values_between(v["ad_id"], v["ts_us"] - staleness_us, v["ts_us"])
        if r.get("campaign") not in allowed:
            outside.append((v, r.get("campaign"), allowed))
    assert not outside, f"{len(outside)} uncommitted answers outside the staleness bound, e.g. {outside[:3]}"

    # Every partition writer of the updater is registered and paused once its query stops.
    writers = ss.State.get(spark, state_name).writers()
    assert [w["writer"] for w in writers] == [f"{writer.id}#p0"], writers
    writer.stop()
    # the query listener pauses it; it hears of the stop asynchronously
    wait_until(lambda: ss.State.get(spark, state_name).writers()[0]["status"] == "paused", 30, "the writer paused")


@pytest.mark.parametrize("durable", [False, True], ids=["in-memory", "durable"])
def test_realtime_restart_counts_nothing_twice(spark, kafka, workdir, state_name, durable):
    topic = f"{state_name}-updates"
    kafka.create_topic(topic, partitions=1)
    # durable: every flush of the updater also writes its changelog file (the durable flush path)
    root = str(workdir / "states") if durable else None
    ss.State.create(spark, state_name, key="ad_id STRING", value="n BIGINT", rule="sum", partitions=4, root=root)
    base = (int(time.time()) - 3600) * 1_000_000
    span = 60_000_000
    updates, _ = workload(11, n_updates=3000, n_views=1, base_us=base, span_us=span)
    sentinel = {"ad_id": "sentinel", "ts_us": base + span + 1_000_000, "campaign": "end"}
    state = ss.State.get(spark, state_name)
    half = len(updates) // 2

    def counted() -> int:
        p = state.progress()
        return p["updates_applied"] + p["updates_waiting"]

    # An epoch of a minute: the stop below lands inside the first one, after its first half was
    # committed in sub-epochs, so the restarted query replays that epoch from its start offsets.
    query = start_updater(spark, kafka, topic, state_name, workdir / "ck", "n", epoch="1 minute")
    for i in range(0, half, 50):
        kafka.produce(topic, [json.dumps(u) for u in updates[i : min(i + 50, half)]])
        time.sleep(0.02)
    wait_until(lambda: (check_running(query) or True) and counted() == half, timeout=60, what="the first half")
    assert not [p for p in query.recentProgress if p["batchId"] >= 0 and p["numInputRows"] > 0], (
        "the first epoch ended before the stop: nothing would be replayed"
    )
    query.stop()
    assert counted() == half
    query = start_updater(spark, kafka, topic, state_name, workdir / "ck", "n")
    kafka.produce(topic, [json.dumps(u) for u in updates[len(updates) // 2 :]] + [json.dumps(sentinel)])
    wait_until(
        lambda: (check_running(query) or True) and passed(state.progress()["update"], base + span),
        timeout=120,
        what="U past every update",
    )
    at = datetime.fromtimestamp((base + span) / 1e6, tz=timezone.utc).replace(tzinfo=None)
    totals = {r["ad_id"]: r["n"] for r in state.as_of(at).collect()}
    expected = Counter(u["ad_id"] for u in updates)
    assert totals == dict(expected), f"totals {totals} != oracle {dict(expected)}"
    if durable:
        # The changelog the flushes wrote holds each update once: the State rebuilt from its tables agrees.
        query.stop()
        assert state.drop()
        rebuilt = ss.State.get(spark, state_name, root=root)
        totals = {r["ad_id"]: r["n"] for r in rebuilt.as_of(at).collect()}
        assert totals == dict(expected), f"rebuilt from the tables: totals {totals} != oracle {dict(expected)}"
