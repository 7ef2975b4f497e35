"""AdCamp on the containers' standalone cluster, started by spark-submit --packages (the test gives
the master, the secret and the packages; this file sets nothing the command line sets).

The campaign updates and the views come from two Kafka topics (Spark's own Kafka source, a few
records a micro-batch so the streams run over many batches); updates go into a durable State on the
directory every container shares; the fetch join of the views writes a Parquet file sink
(exactly-once). it/test_containers_cluster.py kills one worker container mid-stream, then starts this
again on the same checkpoints (a driver restart).

usage: containers_adcamp_app.py WORKDIR BOOTSTRAP EXPECTED_ROWS PROBES_JSON

The first run produces WORKDIR/updates.parquet and WORKDIR/events.parquet into the topics `updates`
and `events` (once: WORKDIR/produced marks it), writes WORKDIR/started.json (application id, the
State's partition owners) once the State exists, and, when the output holds EXPECTED_ROWS rows and
both queries are drained, WORKDIR/joined.parquet (the sink's committed rows) and WORKDIR/final.json
(answers at PROBES_JSON, progress, owners and moves).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import sharedstate as ss
from sharedstate.testing.adcamp import EVENT_SCHEMA, UPDATE_SCHEMA
from sharedstate.testing.streams import committed_rows, wait_for_rows

STATE = "campaigns"
# JSON timestamps at Spark's precision (the default format stops at milliseconds)
JSON_TIME = {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX"}


def produce(spark: SparkSession, workdir: Path, bootstrap: str) -> None:
    """Each frame's rows into its topic in file order (one partition: the topic keeps that order)."""
    for topic in ("updates", "events"):
        frame = spark.read.parquet(str(workdir / f"{topic}.parquet"))
        record = F.to_json(F.struct(*[c for c in frame.columns if c != "seq"]), JSON_TIME)
        (
            frame.select(record.alias("value"), "seq")
            .repartition(1)
            .sortWithinPartitions("seq")
            .select("value")
            .write.format("kafka")
            .option("kafka.bootstrap.servers", bootstrap)
            .option("topic", topic)
            .save()
        )
    (workdir / "produced").write_text("yes")


def topic(spark: SparkSession, bootstrap: str, name: str, schema: str, per_batch: int):
    return (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", name)
        .option("startingOffsets", "earliest")
        .option("maxOffsetsPerTrigger", per_batch)
        .load()
        .select(F.from_json(F.col("value").cast("string"), schema, JSON_TIME).alias("r"))
        .select("r.*")
    )


def main(workdir: Path, bootstrap: str, expected_rows: int, probes: list[str]) -> None:
    spark = SparkSession.builder.appName("containers-adcamp").getOrCreate()
    if not (workdir / "produced").exists():
        produce(spark, workdir, bootstrap)
    # (on a restart, create opens the durable State the root holds: its definition must match)
    state = ss.State.create(spark, STATE, key="ad_id STRING", value="campaign STRING", partitions=4)
    described = state.describe()
    (workdir / "started.json").write_text(
        json.dumps({"app_id": spark.sparkContext.applicationId, "hosts": described["hosts"]})
    )
    writer = (
        topic(spark, bootstrap, "updates", UPDATE_SCHEMA, 8)
        .writeStream.format("sharedstate")
        .option("state", STATE)
        .option("key", "ad_id")
        .option("time", "ts")
        .option("lateness", "20 seconds")
        .option("checkpointLocation", str(workdir / "ck-updates"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )
    events = topic(spark, bootstrap, "events", EVENT_SCHEMA, 40)
    joined = ss.fetch_join(events, STATE, key="ad_id", time="ts", how="left", lateness="30 seconds")
    reader = (
        joined.writeStream.format("parquet")
        .option("path", str(workdir / "out"))
        .option("checkpointLocation", str(workdir / "ck-events"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )

    wait_for_rows(spark, workdir / "out", expected_rows, writer, reader)
    spark.read.parquet(str(workdir / "out")).toPandas().to_parquet(workdir / "joined.parquet")  # committed files only
    progress = state.progress()
    result = {
        "app_id": spark.sparkContext.applicationId,
        "as_of": {t: sorted([r.ad_id, r.campaign] for r in state.as_of(t).collect()) for t in probes},
        "update": str(progress["update"]),
        "updates_rejected": progress["updates_rejected"],
        "updates_applied": progress["updates_applied"],
        "described": state.describe(),
        "rows": committed_rows(spark, workdir / "out"),
    }
    (workdir / "final.json").write_text(json.dumps(result))
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4]))
