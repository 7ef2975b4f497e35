"""Batch writes bulk-load a State: afterwards every value is final (U = +infinity) until a streaming
writer registers; as-of reads and fetches answer for any time, equal to the loaded history."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sharedstate as ss
from sharedstate.testing.adcamp import UPDATE_SCHEMA, write_batches


def test_bulk_load_makes_everything_final(spark, workdir, state_name):
    rng = np.random.default_rng(31)
    history = pd.DataFrame(
        {
            "ad_id": [f"ad{k}" for k in rng.integers(0, 20, size=300)],
            "ts": pd.to_datetime(rng.choice(10**9, size=300, replace=False), unit="us", utc=True),
            "campaign": [f"c{c}" for c in rng.integers(0, 9, size=300)],
        }
    )
    state = ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=3)
    (
        spark.createDataFrame(history.sample(frac=1.0, random_state=2))
        .repartition(4)
        .write.format("sharedstate")
        .option("state", state_name)
        .option("key", "ad_id")
        .option("time", "ts")
        .mode("append")
        .save()
    )

    progress = state.progress()
    assert progress["update_is"] == "+infinity" and progress["updates_applied"] == 300
    for seconds in (0, 250, 999):
        t = pd.Timestamp(seconds, unit="s", tz="UTC")
        want = history[history["ts"] <= t].sort_values("ts").groupby("ad_id").tail(1)
        got = state.as_of(t.strftime("%Y-%m-%d %H:%M:%S")).toPandas()
        assert sorted(zip(got["ad_id"], got["campaign"])) == sorted(zip(want["ad_id"], want["campaign"]))
    # final for any time: the SQL function answers far in the future too
    latest = history.sort_values("ts").groupby("ad_id").tail(1).set_index("ad_id")["campaign"]
    row = spark.sql(f"SELECT sharedstate_fetch('{state_name}', 'ad1', TIMESTAMP '2200-01-01 00:00:00') AS f").first()
    assert row.f.campaign == latest["ad1"]

    # A streaming writer takes over: U is held by it again and moves with its commits.
    more = pd.DataFrame({"ad_id": ["ad1"], "ts": pd.to_datetime([2 * 10**9], unit="us", utc=True), "campaign": ["new"]})
    write_batches(workdir / "updates", [more])
    q = (
        spark.readStream.schema(UPDATE_SCHEMA)
        .parquet(str(workdir / "updates"))
        .writeStream.format("sharedstate")
        .option("state", state_name)
        .option("key", "ad_id")
        .option("time", "ts")
        .option("checkpointLocation", str(workdir / "ck"))
        .start()
    )
    q.processAllAvailable()
    q.stop()
    after = state.progress()
    assert after["update_is"] == "finite" and after["update"] == pd.Timestamp(2 * 10**9, unit="us", tz="UTC")
    assert after["updates_rejected"] == 0


def test_bulk_load_checks_options_when_saving(spark, state_name):
    ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING")
    frame = spark.createDataFrame(
        pd.DataFrame({"ad_id": ["a"], "campaign": ["c"], "ts": pd.to_datetime([1], unit="s", utc=True)})
    )
    with pytest.raises(Exception, match="Option 'time' is required"):
        frame.write.format("sharedstate").option("state", state_name).option("key", "ad_id").mode("append").save()
    assert ss.State.get(spark, state_name).progress()["updates_applied"] == 0
