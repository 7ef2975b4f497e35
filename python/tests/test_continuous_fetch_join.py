"""A fetch join in a continuous-mode query: events from a continuous rate source wait in the
State's pending queue until U passes them, and every answer equals the offline as-of join over the
update history written by a concurrent micro-batch writer."""

from __future__ import annotations

import os
import time

import numpy as np
import pandas as pd
from pyspark.sql import functions as F

import sharedstate as ss
from sharedstate.testing.adcamp import to_spark_parquet
from sharedstate.testing.oracles import asof_expected, utc
from sharedstate.testing.streams import wait_until

KEYS = 4
FILE_SPAN_S = 2


def _write_updates(directory, start: pd.Timestamp, files: int, seed: int) -> pd.DataFrame:
    """One file per FILE_SPAN_S seconds of event time from `start`, rows shuffled inside each file."""
    rng = np.random.default_rng(seed)
    directory.mkdir(parents=True)
    frames = []
    base = time.time() - 10_000
    for i in range(files):
        n = 6
        offsets = np.sort(rng.choice(FILE_SPAN_S * 1_000_000, size=n, replace=False))
        frame = pd.DataFrame(
            {
                "k": rng.integers(0, KEYS, size=n).astype("int64"),
                "ts": start + pd.to_timedelta(i * FILE_SPAN_S * 1_000_000 + offsets, unit="us"),
                "v": (i * 100 + np.arange(n)).astype("int64"),
            }
        ).sample(frac=1.0, random_state=i)
        path = directory / f"part-{i:05d}.parquet"
        to_spark_parquet(frame, path)
        os.utime(path, (base + i, base + i))
        frames.append(frame)
    return pd.concat(frames, ignore_index=True)


def test_continuous_fetch_join_equals_offline_asof_join(spark, workdir, state_name):
    state = ss.State.create(spark, state_name, key="k BIGINT", value="v BIGINT", partitions=2)
    start = pd.Timestamp.now(tz="UTC").floor("s") - pd.Timedelta(seconds=20)
    updates = _write_updates(workdir / "updates", start, files=40, seed=4)  # event time start .. start + 80 s

    events = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 20)
        .option("numPartitions", 1)
        .load()
        .select(F.col("value").alias("event_id"), (F.col("value") % KEYS).alias("k"), F.col("timestamp").alias("ts"))
    )
    joined = ss.fetch_join(events, state_name, key="k", time="ts", continuous=True)
    out = f"out_{state_name}"
    reader = (
        joined.writeStream.format("memory")
        .queryName(out)
        .option("checkpointLocation", str(workdir / "ck-events"))
        .trigger(continuous="200 milliseconds")
        .start()
    )
    writer = (
        spark.readStream.schema("k BIGINT, ts TIMESTAMP, v BIGINT")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(workdir / "updates"))
        .writeStream.format("sharedstate")
        .option("state", state_name)
        .option("key", "k")
        .option("time", "ts")
        .option("value", "v")
        .option("checkpointLocation", str(workdir / "ck-updates"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )

    pending_seen = []

    def enough() -> bool:
        pending_seen.append(state.progress()["pending_fetches"])
        for q in (reader, writer):
            if q.exception() is not None:
                raise AssertionError(f"query failed: {q.exception()}")
        return spark.table(out).count() >= 200

    wait_until(enough, timeout=180, interval=0.2, what="200 answered events")
    reader.stop()
    writer.stop()
    got = spark.table(out).toPandas()
    got["ts"] = pd.to_datetime(got["ts"], utc=True)
    assert got["event_id"].is_unique, "an event was answered twice"
    # answered in arrival order per partition would not hold (replies come as U passes them), but
    # every event up to the last answered one is there: the rate source numbers them 0, 1, 2, ...
    assert sorted(got["event_id"]) == list(range(len(got)))
    expected = (
        asof_expected(got[["event_id", "k", "ts"]], updates, key="k", value="v", time_column=f"{state_name}_time")
        .sort_values("event_id")
        .reset_index(drop=True)
    )
    got = got.sort_values("event_id").reset_index(drop=True)
    want = [None if pd.isna(x) else int(x) for x in expected["want"]]
    have = [None if pd.isna(x) else int(x) for x in got["v"]]
    assert have == want
    assert utc(got[state.time_column]).equals(utc(expected[f"{state_name}_time"]))
    # U started behind the events' wall-clock times, so events waited in the engine's pending queue
    assert max(pending_seen) > 0
