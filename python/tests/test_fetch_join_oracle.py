"""Concurrent update and fetch-join queries on randomised, out-of-order input, checked row by row
against an offline as-of join (pandas.merge_asof) over the whole accepted update history."""

from __future__ import annotations

import pandas as pd
import pytest

import sharedstate as ss
from sharedstate.testing.adcamp import (
    EVENT_SCHEMA,
    UPDATE_SCHEMA,
    accepted_updates,
    comparable,
    expected_late,
    make_workload,
    oracle,
    write_batches,
)
from sharedstate.testing.streams import drained, wait_until


def _run(spark, workdir, state_name, seed: int, how: str) -> tuple[pd.DataFrame, pd.DataFrame, object]:
    work = make_workload(seed)
    write_batches(workdir / "updates", work.update_batches)
    write_batches(workdir / "events", work.event_batches)
    state = ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=4)

    updates = spark.readStream.schema(UPDATE_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(workdir / "updates"))
    writer = (
        updates.writeStream.format("sharedstate")
        .option("state", state_name)
        .option("key", "ad_id")
        .option("time", "ts")
        .option("value", "campaign")
        .option("lateness", "20 seconds")
        .option("checkpointLocation", str(workdir / "ck-updates"))
        .trigger(processingTime="300 milliseconds")
        .start()
    )
    events = spark.readStream.schema(EVENT_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(workdir / "events"))
    joined = ss.fetch_join(events, state_name, key="ad_id", time="ts", how=how)
    out_name = f"out_{state_name}"
    reader = (
        joined.writeStream.format("memory")
        .queryName(out_name)
        .outputMode("append")
        .option("checkpointLocation", str(workdir / "ck-events"))
        .trigger(processingTime="300 milliseconds")
        .start()
    )

    expected = oracle(work.events, accepted_updates(work), time_column="value_time")
    if how == "inner":
        expected = expected[expected["campaign"].notna()]

    def done() -> bool:
        for q in (writer, reader):
            if q.exception() is not None:
                raise AssertionError(f"query failed: {q.exception()}")
        return spark.table(out_name).count() >= len(expected)

    wait_until(done, timeout=300, what=f"{len(expected)} fetch-join rows")
    # once the input is processed and U stops, the query goes idle (no batches back to back)
    drained(writer)
    drained(reader)
    got = spark.table(out_name).toPandas().rename(columns={state.time_column: "value_time"})
    writer.stop()
    reader.stop()
    return got, expected, (work, state)


@pytest.mark.parametrize("seed", [7, 2026])
def test_left_fetch_join_equals_offline_asof_join(spark, workdir, state_name, seed):
    got, expected, (work, state) = _run(spark, workdir, state_name, seed, how="left")
    assert got["event_id"].is_unique, "an event was emitted twice"
    assert len(got) == len(work.events), "every event is emitted exactly once by a left fetch join"
    pd.testing.assert_frame_equal(comparable(got), comparable(expected), check_dtype=False)
    # the input really was adversarial: some events had no value, and some updates were late
    assert expected["campaign"].isna().any()
    late = expected_late(work)
    assert len(late) > 0


def test_late_updates_are_listed_and_as_of_reads_match_the_history(spark, workdir, state_name):
    got, expected, (work, state) = _run(spark, workdir, state_name, seed=11, how="left")
    late = expected_late(work)
    listed = state.late_updates().toPandas()
    assert len(listed) == len(late) > 0
    assert set(listed["reason"]) == {"late"}
    listed_keys = sorted(
        zip(
            listed["key"].map(lambda r: r["ad_id"]),
            pd.to_datetime(listed["time"], utc=True).astype("datetime64[us, UTC]"),
        )
    )
    late_keys = sorted(zip(late["ad_id"], pd.to_datetime(late["ts"], utc=True).astype("datetime64[us, UTC]")))
    assert listed_keys == late_keys
    # each late update was below the U it arrived at
    assert (pd.to_datetime(listed["time"], utc=True) < pd.to_datetime(listed["update_progress"], utc=True)).all()
    progress = state.progress()
    assert progress["updates_rejected"] == len(late)
    # accepted updates below U are applied; the rest wait for U to pass them
    u = pd.Timestamp(progress["update"])
    accepted_ts = pd.to_datetime(work.updates["ts"], utc=True)
    accepted = len(work.updates) - len(late)
    still_waiting = int((accepted_ts >= u).sum())
    assert progress["updates_waiting"] == still_waiting >= 1
    assert progress["updates_applied"] == accepted - still_waiting

    # as-of reads: per key, the newest accepted update at or before t (only final values exist)
    history = accepted_updates(work)
    history = history.assign(ts=pd.to_datetime(history["ts"], utc=True))
    for seconds in (45, 200, 599):
        t = pd.Timestamp(seconds, unit="s", tz="UTC")
        want = history[history["ts"] <= t].sort_values("ts").groupby("ad_id").tail(1)
        got = state.as_of(t.strftime("%Y-%m-%d %H:%M:%S")).toPandas()
        got_pairs = sorted(zip(got["ad_id"], got["campaign"], pd.to_datetime(got[state.time_column], utc=True)))
        assert got_pairs == sorted(zip(want["ad_id"], want["campaign"], want["ts"])), f"as of {t}"


def test_inner_fetch_join_drops_events_without_value(spark, workdir, state_name):
    got, expected, _ = _run(spark, workdir, state_name, seed=3, how="inner")
    assert got["campaign"].notna().all()
    assert got["event_id"].is_unique
    pd.testing.assert_frame_equal(comparable(got), comparable(expected), check_dtype=False)


def test_batch_fetch_join_over_many_events_of_one_slot_equals_asof_join(spark, state_name):
    """Many more events than one fetch request's chunk share a bucket and reply-time slot."""
    import numpy as np

    rng = np.random.default_rng(11)
    keys = [f"k{i}" for i in range(50)]
    updates = pd.DataFrame(
        {
            "ad_id": rng.choice(keys, 2000),
            "campaign": [f"c{i}" for i in range(2000)],
            "ts": pd.to_datetime(rng.integers(0, 10_000_000, 2000), unit="us", utc=True),
        }
    )
    updates = updates.drop_duplicates(["ad_id", "ts"])
    state = ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=2)
    (
        spark.createDataFrame(updates)
        .write.format("sharedstate")
        .option("state", state_name)
        .option("key", "ad_id")
        .option("time", "ts")
        .mode("append")
        .save()
    )
    n = 30_000  # all at times in one 100 ms slot, far above the 4,096-event chunk per group
    events = pd.DataFrame(
        {
            "event_id": range(n),
            "ad_id": rng.choice(keys + ["none"], n),
            "ts": pd.to_datetime(10_000_000 + rng.integers(0, 50_000, n), unit="us", utc=True),
        }
    )
    got = (
        ss.fetch_join(spark.createDataFrame(events), state, key="ad_id", time="ts")
        .toPandas()
        .sort_values("event_id")
        .reset_index(drop=True)
    )
    want = (
        pd.merge_asof(events.sort_values("ts"), updates.sort_values("ts"), on="ts", by="ad_id", direction="backward")
        .sort_values("event_id")
        .reset_index(drop=True)
    )
    assert len(got) == n
    assert got["campaign"].fillna("-").tolist() == want["campaign"].fillna("-").tolist()
