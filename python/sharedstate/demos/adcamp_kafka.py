"""AdCamp with Kafka in and out: the demo of sharedstate.demos.adcamp with its streams in topics.

Campaign updates arrive on the topic `adcamp-updates` and are written into the State `campaigns`;
views arrive on `adcamp-views`, are fetch-joined with the campaign their ad belonged to at the
view's time (read-committed), and are written to the topic `adcamp-enriched` (at-least-once, as
Spark's Kafka sink promises) or, with `--sink delta`, appended to a Delta table (exactly-once).
Both queries read Kafka with Spark's own connector (`ss.session(kafka=True)`). The demo starts a
local broker (sharedstate.testing.kafka, Kafka's jars from Maven Central) whose data and log stay
under `--out`; the functions here take any bootstrap servers. At the end it checks every enriched view against the
offline as-of join over the whole update history (docs/kafka.md).

    python -m sharedstate.demos.adcamp_kafka --out demo-output-kafka
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

try:
    import pandas as pd
except ImportError as e:  # the core package does not need pandas; the demo does
    raise ImportError("the AdCamp demo needs pandas and pyarrow: pip install 'sharedstate[demo]'") from e

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import sharedstate as ss
from sharedstate.demos.report import effectiveness, watch_enrichment
from sharedstate.testing.adcamp import Workload, comparable, make_workload, oracle

UPDATES_TOPIC = "adcamp-updates"
VIEWS_TOPIC = "adcamp-views"
ENRICHED_TOPIC = "adcamp-enriched"

# The topics carry JSON with times as epoch microseconds: exact, whatever the reader's time zone.
UPDATE_JSON = "ad_id STRING, ts_us BIGINT, campaign STRING"
VIEW_JSON = "event_id BIGINT, user_id STRING, ad_id STRING, ts_us BIGINT, clicked BOOLEAN"
ENRICHED_JSON = VIEW_JSON + ", campaign STRING, campaign_ts_us BIGINT"


def update_records(frame: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(keys, JSON values) of AdCamp updates for the updates topic, keyed by ad."""
    ts = pd.to_datetime(frame["ts"], utc=True).astype("datetime64[us, UTC]").astype("int64")
    values = [
        json.dumps({"ad_id": a, "ts_us": int(t), "campaign": c})
        for a, t, c in zip(frame["ad_id"], ts, frame["campaign"])
    ]
    return list(frame["ad_id"]), values


def view_records(frame: pd.DataFrame) -> tuple[list[str], list[str]]:
    """(keys, JSON values) of AdCamp views for the views topic, keyed by ad."""
    ts = pd.to_datetime(frame["ts"], utc=True).astype("datetime64[us, UTC]").astype("int64")
    values = [
        json.dumps({"event_id": int(e), "user_id": u, "ad_id": a, "ts_us": int(t), "clicked": bool(c)})
        for e, u, a, t, c in zip(frame["event_id"], frame["user_id"], frame["ad_id"], ts, frame["clicked"])
    ]
    return list(frame["ad_id"]), values


def feed(
    produce: Callable[..., int],
    work: Workload,
    pace_s: float,
    updates_topic: str = UPDATES_TOPIC,
    views_topic: str = VIEWS_TOPIC,
) -> list[threading.Thread]:
    """Two threads that produce the workload's update and view batches, one batch per `pace_s`
    seconds each, in arrival order: a live feed. `produce(topic, values, keys=...)`. A thread that
    fails keeps its exception in `.error` (the caller's wait sees the topic stop growing)."""

    def run(topic: str, frames: list[pd.DataFrame], records) -> None:
        try:
            _produce_all(topic, frames, records)
        except BaseException as e:  # reported through the thread, which the caller joins
            threading.current_thread().error = e
            raise

    def _produce_all(topic: str, frames: list[pd.DataFrame], records) -> None:
        for frame in frames:
            keys, values = records(frame)
            produce(topic, values, keys=keys)
            time.sleep(pace_s)

    threads = [
        threading.Thread(target=run, args=(updates_topic, work.update_batches, update_records), daemon=True),
        threading.Thread(target=run, args=(views_topic, work.event_batches, view_records), daemon=True),
    ]
    for t in threads:
        t.error = None
        t.start()
    return threads


def _kafka_stream(spark: SparkSession, bootstrap: str, topic: str, schema: str) -> DataFrame:
    raw = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
    )
    parsed = raw.select(F.from_json(F.col("value").cast("string"), schema).alias("r")).select("r.*")
    return parsed.withColumn("ts", F.timestamp_micros("ts_us")).drop("ts_us")


def read_updates(spark: SparkSession, bootstrap: str, topic: str = UPDATES_TOPIC) -> DataFrame:
    """The updates topic as a stream of ad_id, campaign, ts."""
    return _kafka_stream(spark, bootstrap, topic, UPDATE_JSON)


def read_views(spark: SparkSession, bootstrap: str, topic: str = VIEWS_TOPIC) -> DataFrame:
    """The views topic as a stream of event_id, user_id, ad_id, clicked, ts."""
    return _kafka_stream(spark, bootstrap, topic, VIEW_JSON)


def write_updates(updates: DataFrame, state: ss.State, checkpoint: Path, lateness: str):
    """The update query: the updates stream into the State (replace: an ad's campaign from ts on)."""
    return (
        updates.writeStream.format("sharedstate")
        .queryName(f"{state.name}-updates")
        .option("state", state.name)
        .option("key", "ad_id")
        .option("time", "ts")
        .option("value", "campaign")
        .option("lateness", lateness)
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="500 milliseconds")
        .start()
    )


def enrich(views: DataFrame, state: ss.State) -> DataFrame:
    """Each view with the campaign its ad belonged to at the view's time (read-committed, left)."""
    return ss.fetch_join(views, state, key="ad_id", time="ts", rule="latest", mode="committed", how="left")


def as_records(enriched: DataFrame, state: ss.State) -> DataFrame:
    """Enriched views as Kafka records: key event_id, value the row as JSON (times in microseconds)."""
    row = F.struct(
        "event_id",
        "user_id",
        "ad_id",
        F.unix_micros("ts").alias("ts_us"),
        "clicked",
        "campaign",
        F.unix_micros(state.time_column).alias("campaign_ts_us"),
    )
    return enriched.select(F.col("event_id").cast("string").alias("key"), F.to_json(row).alias("value"))


def write_enriched_to_kafka(enriched: DataFrame, state: ss.State, bootstrap: str, topic: str, checkpoint: Path):
    """The fetch-join query into a topic: at-least-once (a batch replayed after a failure is written again)."""
    return (
        as_records(enriched, state)
        .writeStream.format("kafka")
        .queryName(f"{state.name}-enriched-kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="500 milliseconds")
        .start()
    )


def write_enriched_to_delta(enriched: DataFrame, state: ss.State, path: Path, checkpoint: Path):
    """The fetch-join query into Delta: exactly-once (Delta skips a batch id it has committed)."""
    return (
        enriched.writeStream.format("delta")
        .queryName(f"{state.name}-enriched-delta")
        .outputMode("append")
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime="500 milliseconds")
        .start(str(path))
    )


def enriched_from_kafka(spark: SparkSession, bootstrap: str, topic: str = ENRICHED_TOPIC) -> pd.DataFrame:
    """Every record of the enriched topic (duplicates included) as the fetch join's columns, with
    the State's time column named `value_time`, and the record's partition and offset."""
    raw = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .option("endingOffsets", "latest")
        .load()
    )
    rows = raw.select("partition", "offset", F.from_json(F.col("value").cast("string"), ENRICHED_JSON).alias("r"))
    frame = rows.select("partition", "offset", "r.*").toPandas()
    frame["ts"] = pd.to_datetime(frame.pop("ts_us"), unit="us", utc=True)
    frame["value_time"] = pd.to_datetime(frame.pop("campaign_ts_us"), unit="us", utc=True)
    return frame


def expected(work: Workload) -> pd.DataFrame:
    """The offline as-of join of every view over the whole update history (no update is late:
    the demo's lateness covers the generator's disorder, see `lateness_for`), comparable form."""
    return comparable(oracle(work.events, work.updates, time_column="value_time"), "value_time")


def lateness_for(lateness_s: int, window_s: int) -> str:
    """A State lateness no update of `make_workload(late_fraction=0)` can exceed, whatever rows
    Spark's micro-batches take from the topic: an update arrives at most `lateness_s` after its
    time, and batches of arrival windows of `window_s` are produced in a shuffled order."""
    return f"{lateness_s + window_s + 1} seconds"


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=Path("demo-output-kafka"), help="checkpoints, Delta, broker data")
    p.add_argument("--sink", choices=["kafka", "delta"], default="kafka", help="where enriched views go")
    p.add_argument("--ads", type=int, default=100)
    p.add_argument("--events", type=int, default=10_000)
    p.add_argument("--minutes", type=int, default=20, help="event-time span of the generated streams")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--pace", type=float, default=0.5, help="seconds between produced batches")
    p.add_argument("--timeout", type=float, default=600)
    return p.parse_args()


def _rows_written(spark: SparkSession, sink: str, bootstrap: str, delta_path: Path) -> int:
    if sink == "kafka":
        topic = spark.read.format("kafka").option("kafka.bootstrap.servers", bootstrap)
        return topic.option("subscribe", ENRICHED_TOPIC).load().select("key").distinct().count()  # at-least-once
    if not any((delta_path / "_delta_log").glob("*.json")):  # no commit yet
        return 0
    return spark.read.format("delta").load(str(delta_path)).count()


def run(args: argparse.Namespace, bootstrap: str, produce: Callable[..., int], create_topic) -> int:
    out = args.out.resolve()
    window_s, lateness_s = 30, 20
    work = make_workload(
        args.seed,
        keys=args.ads,
        changes_per_key=10,
        events=args.events,
        horizon_s=args.minutes * 60,
        window_s=window_s,
        lateness_s=lateness_s,
        late_fraction=0.0,
    )
    for topic in (UPDATES_TOPIC, VIEWS_TOPIC, ENRICHED_TOPIC):
        create_topic(topic, partitions=2)
    print(
        f"AdCamp on Kafka ({bootstrap}): {len(work.updates)} campaign updates and {len(work.events)} views over "
        f"{args.minutes} minutes of event time, produced out of order in "
        f"{len(work.update_batches)} + {len(work.event_batches)} batches to {UPDATES_TOPIC} and {VIEWS_TOPIC}",
        flush=True,
    )
    spark = ss.session("adcamp-kafka", kafka=True)
    campaigns = ss.State.create(
        spark, "campaigns", key="ad_id STRING", value="campaign STRING", rule="replace", partitions=8
    )
    update_query = write_updates(
        read_updates(spark, bootstrap), campaigns, out / "checkpoints" / "updates", lateness_for(lateness_s, window_s)
    )
    enriched = enrich(read_views(spark, bootstrap), campaigns)
    checkpoint = out / "checkpoints" / "views"
    if args.sink == "kafka":
        fetch_query = write_enriched_to_kafka(enriched, campaigns, bootstrap, ENRICHED_TOPIC, checkpoint)
    else:
        fetch_query = write_enriched_to_delta(enriched, campaigns, out / "enriched", checkpoint)

    feed(produce, work, args.pace)  # after the queries start, so the progress below shows them keep up
    if not watch_enrichment(
        (update_query, fetch_query),
        campaigns,
        len(work.events),
        lambda: _rows_written(spark, args.sink, bootstrap, out / "enriched"),
        args.timeout,
    ):
        return 1
    update_query.stop()
    fetch_query.stop()

    if args.sink == "kafka":
        records = enriched_from_kafka(spark, bootstrap)
        dump = out / "enriched-from-kafka.jsonl"
        records.drop(columns=["partition", "offset"]).to_json(dump, orient="records", lines=True, date_format="iso")
        got = records.drop_duplicates("event_id")
        where = f"Kafka topic {ENRICHED_TOPIC} ({len(records)} records; broker data in {out / 'kafka'}), in {dump}"
    else:
        got = spark.read.format("delta").load(str(out / "enriched")).toPandas()
        got = got.rename(columns={campaigns.time_column: "value_time"})
        records = got
        where = f"Delta table {out / 'enriched'}"
    print("\nCampaign effectiveness (views attributed to the campaign their ad belonged to at view time):")
    print(effectiveness(got).to_string())
    duplicates = len(records) - records["event_id"].nunique()
    ok = records["event_id"].nunique() == len(work.events) and comparable(got, "value_time").equals(expected(work))
    print(f"\nEnriched views: {where}; {duplicates} duplicate records.")
    print(
        f"Check against the offline as-of join over the whole update history: "
        f"{'all ' + str(len(got)) + ' views match' if ok else 'MISMATCH'}"
    )
    # Spark keeps its Kafka producers until the JVM exits, after the broker has stopped: their
    # reconnect warnings would end the demo's output
    jvm = spark.sparkContext._jvm
    jvm.org.apache.logging.log4j.core.config.Configurator.setLevel(
        "org.apache.kafka.clients.NetworkClient", jvm.org.apache.logging.log4j.Level.ERROR
    )
    spark.stop()
    return 0 if ok else 1


def main() -> int:
    args = _parse()
    out = args.out.resolve()
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    from sharedstate.testing.kafka import KafkaBroker

    with KafkaBroker(workdir=out / "kafka") as broker:
        print(f"Started a local Kafka broker at {broker.bootstrap} (data and log in {broker.workdir})", flush=True)
        return run(args, broker.bootstrap, broker.produce, broker.create_topic)


if __name__ == "__main__":
    sys.exit(main())
