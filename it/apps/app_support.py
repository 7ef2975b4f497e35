"""What the local-cluster applications of it/apps share: the session, the AdCamp writer and fetch
join, and recording (waiting is in sharedstate.testing.streams)."""

from __future__ import annotations

import json
import secrets
from pathlib import Path

import pandas as pd
from pyspark.sql import SparkSession

import sharedstate as ss
from sharedstate.testing.adcamp import EVENT_SCHEMA, UPDATE_SCHEMA
from sharedstate.testing.streams import check_running, wait_until


def cluster_session(app_name: str, master: str = "local-cluster[2,1,1024]", **conf: str) -> SparkSession:
    """A session on real executor JVMs with spark.authenticate on (a fresh secret per run)."""
    return ss.session(
        app_name,
        master=master,
        **{
            "spark.authenticate": "true",
            "spark.authenticate.secret": secrets.token_hex(16),
            "spark.sql.shuffle.partitions": "4",
            "spark.driver.memory": "1g",
            **conf,
        },
    )


def adcamp_writer(spark: SparkSession, out: Path, state: str = "campaigns"):
    """Starts the AdCamp writer: the campaign updates arriving in out/updates (one file per trigger)
    written into `state` with 20 s of lateness, checkpointed in out/ck-updates."""
    updates = spark.readStream.schema(UPDATE_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(out / "updates"))
    return (
        updates.writeStream.format("sharedstate")
        .option("state", state)
        .option("key", "ad_id")
        .option("time", "ts")
        .option("value", "campaign")
        .option("lateness", "20 seconds")
        .option("checkpointLocation", str(out / "ck-updates"))
        .trigger(processingTime="300 milliseconds")
        .start()
    )


def adcamp_joined(spark: SparkSession, out: Path, state: str = "campaigns"):
    """The AdCamp events arriving in out/events (one file per trigger), fetch-joined (left) with `state`."""
    events = spark.readStream.schema(EVENT_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(out / "events"))
    return ss.fetch_join(events, state, key="ad_id", time="ts", how="left")


def save(out: Path, name: str, frame: pd.DataFrame) -> None:
    """A pickle, not parquet: toPandas gives arrays of structs as arrays of Spark Rows."""
    frame.to_pickle(out / f"{name}.pkl")


def key_partitions(state: ss.State, key: str) -> pd.DataFrame:
    """Each key the State holds and its State partition: an as-of read plans one Spark partition per
    State partition, in order, so spark_partition_id() is the State partition."""
    from pyspark.sql import functions as F

    return state.as_of().select(key, F.spark_partition_id().alias("partition")).toPandas()


def finish(out: Path, records: dict, marker: str) -> None:
    (out / "records.json").write_text(json.dumps(records, default=str))
    print(marker)


def joined_to_parquet(spark: SparkSession, out: Path, state: str = "campaigns"):
    """Starts adcamp_joined into a parquet sink at out/joined (checkpoint out/ck-events)."""
    return (
        adcamp_joined(spark, out, state)
        .writeStream.format("parquet")
        .option("path", str(out / "joined"))
        .option("checkpointLocation", str(out / "ck-events"))
        .trigger(processingTime="300 milliseconds")
        .start()
    )


def change_batches_of(state: ss.State, out: Path):
    """Starts the State's micro-batch change stream (checkpoint out/ck-changes); returns the query and
    the dict it fills: each batch's (ad_id, campaign, time) rows by batch id (a batch run again
    replaces its first run)."""
    batches: dict = {}

    def keep(df, batch_id: int) -> None:
        batches[batch_id] = [(r["ad_id"], r["campaign"], r["campaigns_time"]) for r in df.collect()]

    query = (
        state.changes()
        .writeStream.foreachBatch(keep)
        .option("checkpointLocation", str(out / "ck-changes"))
        .trigger(processingTime="400 milliseconds")
        .start()
    )
    return query, batches


def update_seconds(state: ss.State) -> float:
    """The State's U in epoch seconds (-inf before any)."""
    p = state.progress()
    return p["update"].timestamp() if p["update"] is not None else float("-inf")


def advance(state: ss.State, feed, i: int, queries, timeout: float = 300, until=lambda: True) -> None:
    """Feeds chunk i (`feed(i)`) and waits, the queries running, until U passes where it was (commits
    after the moves) and `until()` holds."""
    start = update_seconds(state)
    feed(i)
    wait_until(
        lambda: (check_running(*queries), update_seconds(state) > start and until())[1],
        timeout,
        f"U to move on with chunk {i}",
    )


def record_run(spark: SparkSession, state: ss.State, out: Path, records: dict, change_batches: dict) -> None:
    """After the queries stopped: the joined sink's rows (out/joined.parquet), the State's moves, U,
    rejected updates and keys (into `records`), and the change stream's rows by batch (out/changes.parquet)."""
    spark.read.parquet(str(out / "joined")).toPandas().to_parquet(out / "joined.parquet")
    progress = state.progress()
    records["moves"] = state.describe()["moves"]
    records["update"] = str(progress["update"])
    records["updates_rejected"] = progress["updates_rejected"]
    records["keys"] = progress["keys"]
    pd.DataFrame(
        [(b, *row) for b, rows in sorted(change_batches.items()) for row in rows],
        columns=["batch", "ad_id", "campaign", "campaigns_time"],
    ).to_parquet(out / "changes.parquet")
