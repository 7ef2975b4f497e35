"""A Spark application with a durable State, an update stream into it and a fetch-join stream out of
it (Parquet file sink), both checkpointed: the driver the kill -9 test kills and restarts.

    python durable_stream_app.py WORKDIR STATE EXPECTED_ROWS PROBES_JSON

Inputs are WORKDIR/updates and WORKDIR/events; the State's root is WORKDIR/root; the fetch-join
output is WORKDIR/out. It runs until the output holds EXPECTED_ROWS rows and both queries are
drained, then writes WORKDIR/joined.parquet (the committed output) and WORKDIR/final.json (the
State's answers at PROBES_JSON, its progress) and exits.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import sharedstate as ss
from sharedstate.testing.adcamp import EVENT_SCHEMA, UPDATE_SCHEMA
from sharedstate.testing.streams import wait_for_rows


def main(workdir: Path, name: str, expected_rows: int, probes: list[str]) -> None:
    spark = ss.session(
        "durable-stream-app",
        master="local[3]",
        **{
            "spark.sharedstate.root": str(workdir / "root"),
            "spark.sql.shuffle.partitions": "2",
            # the restart after kill -9 takes the root over once the dead lease runs out
            "spark.sharedstate.owner.lease": "5 seconds",
            # more settings from the test (e.g. snapshot rounds on change)
            **json.loads(os.environ.get("DURABLE_APP_CONF", "{}")),
        },
    )
    state = ss.State.create(spark, name, key="ad_id STRING", value="campaign STRING", partitions=3)
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
    joined = ss.fetch_join(events, name, key="ad_id", time="ts", how="left")
    reader = (
        joined.writeStream.format("parquet")
        .option("path", str(workdir / "out"))
        .option("checkpointLocation", str(workdir / "ck-events"))
        .trigger(processingTime="400 milliseconds")
        .start()
    )

    wait_for_rows(spark, workdir / "out", expected_rows, writer, reader)
    # The file sink's committed output (its manifest), not every file in the directory: a killed
    # run leaves files of batches that never committed.
    spark.read.parquet(str(workdir / "out")).toPandas().to_parquet(workdir / "joined.parquet")
    progress = state.progress()
    result = {
        "as_of": {t: sorted([r.ad_id, r.campaign] for r in state.as_of(t).collect()) for t in probes},
        "update": str(progress["update"]),
        "updates_rejected": progress["updates_rejected"],
        "updates_applied": progress["updates_applied"],
    }
    (workdir / "final.json").write_text(json.dumps(result))
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), json.loads(sys.argv[4]))
