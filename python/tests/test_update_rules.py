"""Update rules other than replace, through the Spark sink: values are applied in timestamp order per
key whatever the arrival order, so `sum` stores running totals and `max` running maxima at each time."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sharedstate as ss
from sharedstate.testing.adcamp import write_batches


@pytest.mark.parametrize("rule,running", [("sum", "cumsum"), ("max", "cummax")])
def test_numeric_rules_equal_running_aggregates(spark, workdir, state_name, rule, running):
    rng = np.random.default_rng(21)
    n = 400
    times = rng.choice(10_000_000, size=n, replace=False)  # unique microsecond times
    updates = pd.DataFrame(
        {
            "user": [f"u{k}" for k in rng.integers(0, 15, size=n)],
            "ts": pd.to_datetime(times, unit="us", utc=True),
            "clicks": rng.integers(-50, 100, size=n).astype("int64"),
        }
    )
    # Shuffled and cut into 5 batches: arrival order is not time order. All times are within 10 s,
    # the allowed lateness, so nothing is late; a last batch far in the future makes them all final.
    shuffled = updates.sample(frac=1.0, random_state=4).reset_index(drop=True)
    closer = pd.DataFrame(
        {"user": ["zz"], "ts": pd.to_datetime([10**12], unit="us", utc=True), "clicks": np.array([0], dtype="int64")}
    )
    batches = [shuffled.iloc[i::5].reset_index(drop=True) for i in range(5)]
    write_batches(workdir / "updates", batches + [closer])
    state = ss.State.create(spark, state_name, key="user STRING", value="clicks BIGINT", rule=rule, partitions=3)
    q = (
        spark.readStream.schema("user STRING, ts TIMESTAMP, clicks BIGINT")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(workdir / "updates"))
        .writeStream.format("sharedstate")
        .option("state", state_name)
        .option("key", "user")
        .option("time", "ts")
        .option("lateness", "10 seconds")
        .option("checkpointLocation", str(workdir / "ck"))
        .start()
    )
    q.processAllAvailable()
    q.stop()
    assert state.progress()["updates_rejected"] == 0
    assert state.progress()["update"] > updates["ts"].max()

    # Oracle: the running aggregate per user in time order, read as of each probe time.
    expected = updates.sort_values("ts").assign(total=lambda d: getattr(d.groupby("user")["clicks"], running)())

    probes = pd.DataFrame(
        {
            "user": [f"u{k}" for k in rng.integers(0, 16, size=200)],
            "ts": pd.to_datetime(rng.integers(0, 10_000_000, size=200), unit="us", utc=True),
        }
    )
    probes = probes.drop_duplicates(["user", "ts"]).reset_index(drop=True)
    spark.createDataFrame(probes).createOrReplaceTempView(f"probes_{state_name}")
    got = spark.sql(
        f"SELECT user, ts, sharedstate_fetch('{state_name}', user, ts).clicks AS total FROM probes_{state_name}"
    ).toPandas()
    got["ts"] = pd.to_datetime(got["ts"]).dt.tz_localize("UTC")  # the session time zone is UTC
    want = pd.merge_asof(
        probes.sort_values("ts"), expected[["user", "ts", "total"]], on="ts", by="user", direction="backward"
    )
    want["ts"] = want["ts"].astype("datetime64[us, UTC]")
    got["ts"] = got["ts"].astype("datetime64[us, UTC]")
    merged = got.merge(want, on=["user", "ts"], suffixes=("_got", "_want"))
    assert len(merged) == len(probes)
    same = (merged["total_got"] == merged["total_want"]) | (merged["total_got"].isna() & merged["total_want"].isna())
    assert same.all(), merged[~same].head()
    assert merged["total_want"].notna().sum() > 100
