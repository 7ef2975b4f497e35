"""A durable State on local-cluster[2,1,1024]: an update stream into it and a fetch-join stream out of
it (Parquet file sink), both checkpointed. it/test_cluster_durability.py kills one executor JVM with
kill -9 mid-stream; the streams must go on (Spark retries the failed tasks, the lost executor's State
partitions are rebuilt on a live one) and end with the oracle's answers.

usage: durable_cluster_app.py WORKDIR STATE EXPECTED_ROWS PROBES_JSON

Writes WORKDIR/started.json (application id, partition owners) once the State exists, then, when
the output holds EXPECTED_ROWS rows and both queries are drained, WORKDIR/joined.parquet and
WORKDIR/final.json (answers at PROBES_JSON, progress, owners and the partition moves).
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import sharedstate as ss
from sharedstate.demos.adcamp_data import EVENT_SCHEMA, UPDATE_SCHEMA


def describe(spark, name: str) -> dict:
    return json.loads(spark.sparkContext._jvm.io.sharedstate.spark.SharedStateApi.get(name))


def main(workdir: Path, name: str, expected_rows: int, probes: list[str]) -> None:
    spark = ss.session("durable-cluster-app", master="local-cluster[2,1,1024]", **{
        "spark.sharedstate.root": str(workdir / "root"), "spark.sharedstate.snapshot.interval": "0",
        "spark.sql.shuffle.partitions": "2", "spark.driver.memory": "1g"})
    state = ss.State.create(spark, name, key="ad_id STRING", value="campaign STRING", partitions=4)
    (workdir / "started.json").write_text(json.dumps(
        {"app_id": spark.sparkContext.applicationId, "hosts": describe(spark, name)["hosts"]}))
    updates = spark.readStream.schema(UPDATE_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(workdir / "updates"))
    writer = (updates.writeStream.format("sharedstate").option("state", name).option("key", "ad_id")
              .option("time", "ts").option("lateness", "20 seconds")
              .option("checkpointLocation", str(workdir / "ck-updates"))
              .trigger(processingTime="400 milliseconds").start())
    events = spark.readStream.schema(EVENT_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(workdir / "events"))
    joined = ss.fetch_join(events, name, key="ad_id", time="ts", how="left")
    reader = (joined.writeStream.format("parquet").option("path", str(workdir / "out"))
              .option("checkpointLocation", str(workdir / "ck-events"))
              .trigger(processingTime="400 milliseconds").start())

    def rows() -> int:
        for q in (writer, reader):
            if q.exception() is not None:
                raise RuntimeError(f"query {q.name or q.id} failed: {q.exception()}")
        try:
            return spark.read.parquet(str(workdir / "out")).count()
        except Exception:  # nothing committed yet
            return 0

    while rows() < expected_rows:
        time.sleep(1)
    writer.processAllAvailable()
    reader.processAllAvailable()
    writer.stop()
    reader.stop()
    spark.read.parquet(str(workdir / "out")).toPandas().to_parquet(workdir / "joined.parquet")
    progress = state.progress()
    result = {
        "as_of": {t: sorted([r.ad_id, r.campaign] for r in state.as_of(t).collect()) for t in probes},
        "update": str(progress["update"]),
        "updates_rejected": progress["updates_rejected"],
        "updates_applied": progress["updates_applied"],
        "described": describe(spark, name),
    }
    (workdir / "final.json").write_text(json.dumps(result))
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4]))
