"""The SQL face: sharedstate_fetch(state, key, time) on batch queries, against the offline as-of join."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sharedstate as ss
from sharedstate.demos.adcamp_data import UPDATE_SCHEMA, accepted_updates, make_workload, oracle, write_batches


@pytest.fixture
def loaded_state(spark, workdir, state_name):
    """A State with a randomised, out-of-order update history written by a streaming query."""
    work = make_workload(seed=5, keys=12, events=10)
    write_batches(workdir / "updates", work.update_batches)
    state = ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=3)
    q = (spark.readStream.schema(UPDATE_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(workdir / "updates"))
         .writeStream.format("sharedstate").option("state", state_name).option("key", "ad_id").option("time", "ts")
         .option("lateness", "20 seconds").option("checkpointLocation", str(workdir / "ck")).start())
    q.processAllAvailable()
    q.stop()
    return state, accepted_updates(work)


def test_sql_fetch_equals_asof_join_below_u(spark, loaded_state):
    state, history = loaded_state
    u = pd.Timestamp(state.progress()["update"])
    rng = np.random.default_rng(9)
    events = pd.DataFrame({
        "event_id": np.arange(300),
        "ad_id": [f"ad{k:03d}" for k in rng.integers(0, 14, size=300)],
        "ts": pd.to_datetime(rng.integers(0, u.value // 1000, size=300), unit="us", utc=True),
    })
    spark.createDataFrame(events).createOrReplaceTempView("views_sql")
    got = spark.sql(f"SELECT event_id, sharedstate_fetch('{state.name}', ad_id, ts) AS f FROM views_sql").toPandas()
    got["campaign"] = got["f"].map(lambda r: None if r is None else r["campaign"])
    got["value_time"] = got["f"].map(lambda r: None if r is None else r[state.time_column])
    want = oracle(events, history, time_column="value_time").sort_values("event_id").reset_index(drop=True)
    got = got.sort_values("event_id").reset_index(drop=True)
    assert got["campaign"].tolist() == [None if pd.isna(c) else c for c in want["campaign"]]
    got_times = pd.to_datetime(got["value_time"], utc=True)
    want_times = pd.to_datetime(want["value_time"], utc=True)
    assert ((got_times == want_times) | (got_times.isna() & want_times.isna())).all()
    assert want["campaign"].isna().any() and want["campaign"].notna().any()


def test_sql_fetch_refuses_times_that_are_not_final(spark, loaded_state):
    state, _ = loaded_state
    with pytest.raises(Exception, match="is not yet below the update progress"):
        spark.sql(f"SELECT sharedstate_fetch('{state.name}', 'ad001', TIMESTAMP '2100-01-01 00:00:00')").collect()


def test_sql_fetch_checks_its_arguments(spark, loaded_state):
    state, _ = loaded_state
    with pytest.raises(Exception, match="Unknown State 'nope'"):
        spark.sql("SELECT sharedstate_fetch('nope', 'a', TIMESTAMP '1970-01-01 00:00:01')").collect()
    with pytest.raises(Exception, match="the key of State .* is ad_id STRING; got INT"):
        spark.sql(f"SELECT sharedstate_fetch('{state.name}', 1, TIMESTAMP '1970-01-01 00:00:01')").collect()
    with pytest.raises(Exception, match="the time argument must be TIMESTAMP"):
        spark.sql(f"SELECT sharedstate_fetch('{state.name}', 'a', 5)").collect()
