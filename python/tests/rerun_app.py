"""The driver the re-run-after-driver-kill test kills and restarts (test_fetch_rerun_driver_kill.py).

    python rerun_app.py WORKDIR STATE PHASE

A durable State (root WORKDIR/root) fed from WORKDIR/updates, and a fetch join of WORKDIR/events into
a foreachBatch sink that records every attempt of every batch as WORKDIR/attempts/<batch>.<n>.json.
PHASE `first`: after the sink records the first batch with answers, U moves on (the next update file
is written and the writer drained), then WORKDIR/crash-ready appears and the driver waits to be
killed: it dies between the sink's commit and Spark's commit log. PHASE `second`: both queries
restart from their checkpoints, are drained, and WORKDIR/second-done appears.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pandas as pd

import sharedstate as ss
from sharedstate.testing.adcamp import EVENT_SCHEMA, UPDATE_SCHEMA, write_batches

LATER_UPDATES = pd.DataFrame(
    {"ad_id": ["a", "z"], "campaign": ["c2", "u100"], "ts": pd.to_datetime([35, 100], unit="s", utc=True)}
)


def main(workdir: Path, name: str, phase: str) -> None:
    spark = ss.session(
        "rerun-app",
        master="local[3]",
        **{
            "spark.sharedstate.root": str(workdir / "root"),
            "spark.sql.shuffle.partitions": "2",
            "spark.sharedstate.owner.lease": "5 seconds",
        },
    )
    ss.State.create(spark, name, key="ad_id STRING", value="campaign STRING", partitions=2)
    writer = (
        spark.readStream.schema(UPDATE_SCHEMA)
        .parquet(str(workdir / "updates"))
        .writeStream.format("sharedstate")
        .option("state", name)
        .option("key", "ad_id")
        .option("time", "ts")
        .option("checkpointLocation", str(workdir / "ck-updates"))
        .start()
    )
    writer.processAllAvailable()
    attempts = workdir / "attempts"
    attempts.mkdir(exist_ok=True)

    def sink(df, batch_id):
        rows = sorted([r["event_id"], r["campaign"]] for r in df.collect())
        n = len(list(attempts.glob(f"{batch_id}.*.json")))
        (attempts / f"{batch_id}.{n}.json").write_text(json.dumps(rows))
        if rows and phase == "first":
            write_batches(workdir / "updates", [LATER_UPDATES], first_index=1)
            writer.processAllAvailable()  # U at 100 s, durable
            (workdir / "crash-ready").write_text(str(batch_id))
            time.sleep(3600)

    events = spark.readStream.schema(EVENT_SCHEMA).parquet(str(workdir / "events"))
    reader = (
        ss.fetch_join(events, name, key="ad_id", time="ts")
        .select("event_id", "campaign")
        .writeStream.foreachBatch(sink)
        .option("checkpointLocation", str(workdir / "ck-events"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    if phase == "first":
        reader.awaitTermination()
        return
    reader.processAllAvailable()  # the re-run of the killed batch, then the tick of U's step to 100 s
    reader.stop()
    writer.stop()
    (workdir / "second-done").write_text("ok")
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3])
