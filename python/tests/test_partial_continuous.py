"""Partial States in a continuous-mode fetch join: events from a continuous rate source wait in the
State's pending queue until U passes them; in global scope every answer equals the sum of every
update at or before the event (the instances merged), in local scope each answer is the instance of
the event's partition: at most the global answer, and less once the other instance has updates."""

from __future__ import annotations

import numpy as np
import pandas as pd
from pyspark.sql import functions as F

import sharedstate as ss
from sharedstate.testing.adcamp import write_batches
from sharedstate.testing.streams import wait_until

KEYS = 3


def test_continuous_global_and_local_fetches_of_a_partial_state(spark, workdir, state_name):
    ss.State.create(spark, state_name, key="k BIGINT", value="v BIGINT", rule="sum", partial="sum")
    rng = np.random.default_rng(8)
    start = pd.Timestamp.now(tz="UTC").floor("s") - pd.Timedelta(seconds=20)
    frames = []
    for i in range(40):  # event time start .. start + 80 s, shuffled inside each file
        offsets = np.sort(rng.choice(2_000_000, size=6, replace=False))
        frames.append(
            pd.DataFrame(
                {
                    "u": np.arange(i * 6, i * 6 + 6, dtype="int64"),
                    "k": rng.integers(0, KEYS, size=6).astype("int64"),
                    "ts": start + pd.to_timedelta(i * 2_000_000 + offsets, unit="us"),
                    "v": rng.integers(1, 50, size=6).astype("int64"),
                }
            ).sample(frac=1.0, random_state=i)
        )
    write_batches(workdir / "updates", frames)
    updates = pd.concat(frames, ignore_index=True)

    events = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 20)
        .option("numPartitions", 2)
        .load()
        .select(F.col("value").alias("event_id"), (F.col("value") % KEYS).alias("k"), F.col("timestamp").alias("ts"))
    )
    merged = ss.fetch_join(events, state_name, key="k", time="ts", continuous=True).select(
        "event_id", "k", "ts", F.col("v").alias("global_v"), F.spark_partition_id().alias("part")
    )
    both = ss.fetch_join(merged, state_name, key="k", time="ts", continuous=True, scope="local")
    out = f"out_{state_name}"
    reader = (
        both.writeStream.format("memory")
        .queryName(out)
        .option("checkpointLocation", str(workdir / "ck-events"))
        .trigger(continuous="200 milliseconds")
        .start()
    )
    writer = (
        spark.readStream.schema("u BIGINT, k BIGINT, ts TIMESTAMP, v BIGINT")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(workdir / "updates"))
        .repartition(2, "u")  # two writer tasks: instances 0 and 1
        .select("k", "ts", "v")
        .writeStream.format("sharedstate")
        .option("state", state_name)
        .option("key", "k")
        .option("time", "ts")
        .option("checkpointLocation", str(workdir / "ck-updates"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )

    def enough() -> bool:
        for q in (reader, writer):
            if q.exception() is not None:
                raise AssertionError(f"query failed: {q.exception()}")
        return spark.table(out).count() >= 200

    wait_until(enough, timeout=180, interval=0.2, what="200 answered events")
    reader.stop()
    writer.stop()
    got = spark.table(out).toPandas()
    assert got["event_id"].is_unique
    ts = pd.to_datetime(got["ts"], utc=True)
    for e, t in zip(got.itertuples(), ts):
        mine = updates[(updates["k"] == e.k) & (updates["ts"] <= t)]
        want = int(mine["v"].sum()) if len(mine) else None
        have = None if pd.isna(e.global_v) else int(e.global_v)
        assert have == want, (e.event_id, have, want)
        local = 0 if pd.isna(e.v) else int(e.v)
        assert 0 <= local <= (want or 0)
    # events of both partitions read their own instance, which holds only part of the merged value
    assert got["v"].notna().any() and set(got["part"]) == {0, 1}
    assert (got["v"].fillna(0) < got["global_v"].fillna(0)).any()
