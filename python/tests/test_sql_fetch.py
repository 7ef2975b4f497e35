"""The SQL face: sharedstate_fetch(state, key, time) on batch queries, against the offline as-of join."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import sharedstate as ss
from sharedstate.testing.adcamp import UPDATE_SCHEMA, accepted_updates, make_workload, oracle, write_batches


@pytest.fixture
def loaded_state(spark, workdir, state_name):
    """A State with a randomised, out-of-order update history written by a streaming query."""
    work = make_workload(seed=5, keys=12, events=10)
    write_batches(workdir / "updates", work.update_batches)
    state = ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=3)
    q = (
        spark.readStream.schema(UPDATE_SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .parquet(str(workdir / "updates"))
        .writeStream.format("sharedstate")
        .option("state", state_name)
        .option("key", "ad_id")
        .option("time", "ts")
        .option("lateness", "20 seconds")
        .option("checkpointLocation", str(workdir / "ck"))
        .start()
    )
    q.processAllAvailable()
    q.stop()
    return state, accepted_updates(work)


def test_sql_fetch_equals_asof_join_below_u(spark, loaded_state):
    state, history = loaded_state
    u = pd.Timestamp(state.progress()["update"])
    rng = np.random.default_rng(9)
    events = pd.DataFrame(
        {
            "event_id": np.arange(300),
            "ad_id": [f"ad{k:03d}" for k in rng.integers(0, 14, size=300)],
            "ts": pd.to_datetime(rng.integers(0, u.value // 1000, size=300), unit="us", utc=True),
        }
    )
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


def test_sql_fetch_with_range_and_aggregate_rules(spark, loaded_state):
    state, history = loaded_state
    u = pd.Timestamp(state.progress()["update"])
    rng = np.random.default_rng(10)
    events = pd.DataFrame(
        {
            "event_id": np.arange(200),
            "ad_id": [f"ad{k:03d}" for k in rng.integers(0, 14, size=200)],
            "ts": pd.to_datetime(rng.integers(0, u.value // 1000, size=200), unit="us", utc=True),
        }
    )
    spark.createDataFrame(events).createOrReplaceTempView("views_sql_range")
    got = (
        spark.sql(
            f"SELECT event_id, sharedstate_fetch('{state.name}', ad_id, ts, 'range', '2 minutes') AS r, "
            f"sharedstate_fetch('{state.name}', ad_id, ts, 'count', '2 minutes') AS c FROM views_sql_range"
        )
        .toPandas()
        .sort_values("event_id")
        .reset_index(drop=True)
    )
    h = history.assign(ts=pd.to_datetime(history["ts"], utc=True))
    for e, r, c in zip(events.itertuples(), got["r"], got["c"]):
        t = pd.Timestamp(e.ts)
        want = h[(h["ad_id"] == e.ad_id) & (h["ts"] >= t - pd.Timedelta(minutes=2)) & (h["ts"] <= t)].sort_values("ts")
        pairs = [(pd.Timestamp(p[state.time_column], tz="UTC"), p["campaign"]) for p in r[f"{state.name}_range"]]
        assert pairs == list(zip(want["ts"], want["campaign"])), f"event {e.event_id}"
        assert c[f"{state.name}_count"] == len(want)
    assert (got["c"].map(lambda c: c[f"{state.name}_count"]) >= 2).any()
    with pytest.raises(Exception, match="rule 'range' needs a window"):
        spark.sql(
            f"SELECT sharedstate_fetch('{state.name}', 'ad001', TIMESTAMP '1970-01-01 00:00:01', 'range')"
        ).collect()


def test_sql_fetch_read_uncommitted_with_staleness(spark, loaded_state):
    state, history = loaded_state
    u = pd.Timestamp(state.progress()["update"])
    t = (u + pd.Timedelta(seconds=5)).strftime("%Y-%m-%d %H:%M:%S.%f")
    sql = f"SELECT sharedstate_fetch('{state.name}', 'ad001', TIMESTAMP '{t}', 'latest', NULL, '{{}}') AS f"
    with pytest.raises(Exception, match="not yet below the update progress"):
        spark.sql(sql.format("1 second")).collect()
    got = spark.sql(sql.format("10 seconds")).collect()[0]["f"]  # t - 10 s < U: answered from what is applied
    h = history.assign(ts=pd.to_datetime(history["ts"], utc=True))
    want = h[(h["ad_id"] == "ad001") & (h["ts"] < u)].sort_values("ts").tail(1)
    assert got["campaign"] == want["campaign"].iloc[0]
