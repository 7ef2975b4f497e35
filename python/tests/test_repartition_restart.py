"""A writer and a fetch-join query restart from their checkpoints with twice, then half the input
partitions (a `repartition` of each input): the State's partitioning does not depend on the queries'
parallelism, so both go on, and the fetch join's rows over the three runs equal the offline as-of
join, each event once. Spark's own state cannot do this: a stateful query keeps the number of shuffle
partitions of its first run for the life of its checkpoint."""

from __future__ import annotations

import pandas as pd

import sharedstate as ss
from sharedstate.testing.adcamp import (
    EVENT_SCHEMA,
    UPDATE_SCHEMA,
    accepted_updates,
    comparable,
    make_workload,
    oracle,
    write_batches,
)


def test_restart_with_twice_then_half_the_input_partitions_equals_the_oracle(spark, workdir, state_name):
    work = make_workload(31, keys=30, events=900)
    ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=4)
    updates, events = work.update_batches, work.event_batches
    base = 1_700_000_000.0
    fed_updates = fed_events = 0
    # a third of the input per run; the first run's input partitions, then 2x, then 0.5x
    for run, n in enumerate([4, 8, 2]):
        upto_updates, upto_events = len(updates) * (run + 1) // 3, len(events) * (run + 1) // 3
        write_batches(workdir / "updates", updates[fed_updates:upto_updates], start_mtime=base, first_index=fed_updates)
        write_batches(workdir / "events", events[fed_events:upto_events], start_mtime=base, first_index=fed_events)
        fed_updates, fed_events = upto_updates, upto_events
        writer = (
            spark.readStream.schema(UPDATE_SCHEMA)
            .option("maxFilesPerTrigger", 1)  # one batch per file: the late updates the oracle expects
            .parquet(str(workdir / "updates"))
            .repartition(n)
            .writeStream.format("sharedstate")
            .option("state", state_name)
            .option("key", "ad_id")
            .option("time", "ts")
            .option("value", "campaign")
            .option("lateness", "20 seconds")
            .option("checkpointLocation", str(workdir / "ck-updates"))
            .start()
        )
        joined = ss.fetch_join(
            spark.readStream.schema(EVENT_SCHEMA)
            .option("maxFilesPerTrigger", 1)
            .parquet(str(workdir / "events"))
            .repartition(n),
            state_name,
            key="ad_id",
            time="ts",
            how="left",
        )
        reader = (
            joined.writeStream.format("parquet")
            .option("path", str(workdir / "joined"))
            .option("checkpointLocation", str(workdir / "ck-events"))
            .start()
        )
        writer.processAllAvailable()
        reader.processAllAvailable()
        writer.stop()
        reader.stop()

    got = pd.read_parquet(workdir / "joined").rename(columns={f"{state_name}_time": "value_time"})
    expected = oracle(work.events, accepted_updates(work), time_column="value_time")
    assert got["event_id"].is_unique, "an event was emitted twice across the restarts"
    assert len(got) == len(work.events)
    pd.testing.assert_frame_equal(comparable(got), comparable(expected), check_dtype=False)
