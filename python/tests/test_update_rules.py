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


def _stream_shuffled(spark, workdir, state_name, updates: pd.DataFrame, schema: str, select=("*",)) -> None:
    """Writes `updates` (columns `select`ed) through the sink in 5 shuffled batches (arrival order is not
    time order), then a closer far in the future that makes them all final; nothing may be late."""
    shuffled = updates.sample(frac=1.0, random_state=8).reset_index(drop=True)
    closer = updates.iloc[[0]].assign(user="zz", ts=pd.to_datetime([10**12], unit="us", utc=True))
    write_batches(workdir / "updates", [shuffled.iloc[i::5].reset_index(drop=True) for i in range(5)] + [closer])
    q = (
        spark.readStream.schema(schema)
        .option("maxFilesPerTrigger", 1)
        .parquet(str(workdir / "updates"))
        .selectExpr(*select)
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


def _final_values(state: ss.State) -> pd.DataFrame:
    return state.as_of("2100-01-01 00:00:00").toPandas().set_index("user").drop(index="zz", errors="ignore")


def _random_updates(seed: int, n: int = 300) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "user": [f"u{k}" for k in rng.integers(0, 12, size=n)],
            "ts": pd.to_datetime(rng.choice(10_000_000, size=n, replace=False), unit="us", utc=True),
            "clicks": rng.integers(-500, 500, size=n).astype("int64"),
            "page": [f"p{i}" for i in range(n)],
        }
    )


def test_expr_rule_greatest_keeps_the_running_maximum(spark, workdir, state_name):
    updates = _random_updates(5)[["user", "ts", "clicks"]]
    state = ss.State.create(
        spark, state_name, key="user STRING", value="clicks BIGINT", rule="expr:greatest(old, new)", partitions=3
    )
    assert state.rule == "expr:greatest(old, new)"
    _stream_shuffled(spark, workdir, state_name, updates, "user STRING, ts TIMESTAMP, clicks BIGINT")
    assert state.progress()["updates_rejected"] == 0
    got = _final_values(state)["clicks"].sort_index()
    want = updates.groupby("user")["clicks"].max().sort_index()  # greatest folded in any order: the max
    assert got.to_dict() == want.to_dict()


def test_expr_rule_with_a_struct_value_applies_in_event_time_order(spark, workdir, state_name):
    updates = _random_updates(6)
    rule = "expr:struct(coalesce(old.total, 0) + new.total, concat_ws('>', old.path, new.path))"
    state = ss.State.create(spark, state_name, key="user STRING", value="total BIGINT, path STRING", rule=rule)
    _stream_shuffled(
        spark,
        workdir,
        state_name,
        updates.rename(columns={"clicks": "total", "page": "path"}),
        "user STRING, ts TIMESTAMP, total BIGINT, path STRING",
    )
    assert state.progress()["updates_rejected"] == 0
    got = _final_values(state)
    # Oracle: per user in event-time order, the running total and the path of pages joined with '>'.
    ordered = updates.sort_values("ts").groupby("user")
    want_total = ordered["clicks"].sum()
    want_path = ordered["page"].agg(">".join)
    assert got["total"].sort_index().to_dict() == want_total.sort_index().to_dict()
    assert got["path"].sort_index().to_dict() == want_path.sort_index().to_dict()


def test_expr_rule_that_spark_cannot_read_fails_at_creation(spark, state_name):
    with pytest.raises(Exception, match="cannot resolve") as e:
        ss.State.create(spark, state_name, key="user STRING", value="clicks BIGINT", rule="expr:old + nosuch")
    assert "expr:old + nosuch" in str(e.value)


@pytest.mark.parametrize("rule", ["min", "max"])
def test_min_and_max_order_nan_as_spark_sql(spark, workdir, state_name, rule):
    rng = np.random.default_rng(9)
    n = 600
    x = rng.normal(0, 100, size=n)
    special = rng.integers(0, 4, size=n) == 0
    x[special] = rng.choice([np.inf, -np.inf, 0.0, -0.0], size=special.sum())
    updates = pd.DataFrame(
        {
            "user": [f"u{k}" for k in rng.integers(0, 20, size=n)],
            "ts": pd.to_datetime(rng.choice(10_000_000, size=n, replace=False), unit="us", utc=True),
            "x": x,
            "nan": rng.integers(0, 12, size=n) == 0,  # pandas NaN would arrive as null: Spark makes the NaNs
        }
    )
    with_nan = ("user", "ts", "if(nan, double('NaN'), x) AS x")
    state = ss.State.create(spark, state_name, key="user STRING", value="x DOUBLE", rule=rule, partitions=2)
    _stream_shuffled(spark, workdir, state_name, updates, "user STRING, ts TIMESTAMP, x DOUBLE, nan BOOLEAN", with_nan)
    got = _final_values(state)["x"].sort_index()
    spark.createDataFrame(updates).selectExpr(*with_nan).createOrReplaceTempView(f"nan_{state_name}")
    want = spark.sql(f"SELECT user, {rule}(x) AS x FROM nan_{state_name} GROUP BY user").toPandas()
    want = want.set_index("user")["x"].sort_index()
    assert list(got.index) == list(want.index)
    same = (got == want) | (got.isna() & want.isna())
    assert same.all(), pd.DataFrame({"got": got, "want": want})[~same]
    if rule == "min":
        assert got.notna().all(), "one NaN does not poison a minimum"
    else:
        assert got.isna().sum() > 5, "a maximum is NaN once one value is"
