"""Writers hold U back while their query runs, and only then: registered at start (before any
batch), paused at stop or after `idleTimeout` without input, resumed when they run again; updates
too far ahead of the clock are rejected and never move U; writers and readers can be listed,
finished and removed through the public API."""

from __future__ import annotations

from datetime import UTC, datetime

import pandas as pd
import pytest

import sharedstate as ss
from sharedstate.testing.adcamp import UPDATE_SCHEMA, write_batches
from sharedstate.testing.streams import drained, wait_until


def _secs(*s):
    return pd.to_datetime(list(s), unit="s", utc=True)


def _frame(seconds, tag):
    return pd.DataFrame(
        {"ad_id": [f"ad{i % 3}" for i in range(len(seconds))], "ts": _secs(*seconds), "campaign": [tag] * len(seconds)}
    )


def _writer(spark, workdir, state_name, name, **options):
    w = (
        spark.readStream.schema(UPDATE_SCHEMA)
        .parquet(str(workdir / name))
        .writeStream.format("sharedstate")
        .option("state", state_name)
        .option("key", "ad_id")
        .option("time", "ts")
        .option("checkpointLocation", str(workdir / f"ck-{name}"))
        .trigger(processingTime="200 milliseconds")
    )
    for k, v in options.items():
        w = w.option(k, v)
    return w.start()


def _status(state, query):
    return {w["writer"]: w["status"] for w in state.writers()}.get(str(query.id))


def test_a_writer_holds_u_from_its_start_and_a_stopped_one_no_longer(spark, workdir, state_name):
    state = ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=2)
    write_batches(workdir / "a", [_frame([10, 20], "a1")])
    (workdir / "b").mkdir()
    a = _writer(spark, workdir, state_name, "a")
    drained(a)
    assert state.progress()["update"] == _secs(20)[0]
    # b has no input, so it plans no batch: it still holds U from its start
    b = _writer(spark, workdir, state_name, "b")
    wait_until(lambda: _status(state, b) == "active", 60, "the second writer to register at its start")
    write_batches(workdir / "a", [_frame([30, 40], "a2")], first_index=1)
    drained(a)
    assert state.progress()["update"] == _secs(20)[0], "the idle-but-running writer b holds U at its join point"
    b.stop()
    # Spark delivers a stop to listeners asynchronously: paused a moment after stop() returns
    wait_until(lambda: _status(state, b) == "paused", 30, "the stopped writer to be paused")
    assert state.progress()["update"] == _secs(40)[0], "a stopped writer no longer pins U"
    # the restarted writer (same checkpoint, same query id) resumes and holds U again
    b = _writer(spark, workdir, state_name, "b")
    wait_until(lambda: _status(state, b) == "active", 60, "the restarted writer to resume")
    write_batches(workdir / "a", [_frame([50], "a3")], first_index=2)
    drained(a)
    assert state.progress()["update"] == _secs(40)[0]
    a.stop()
    b.stop()
    wait_until(lambda: {w["status"] for w in state.writers()} == {"paused"}, 30, "both stopped writers to be paused")
    assert state.progress()["update"] == _secs(40)[0], "with every writer paused, U stays (it never jumps to +inf)"


def test_an_idle_writer_stops_holding_u_and_rejoins_when_input_returns(spark, workdir, state_name):
    state = ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=2)
    write_batches(workdir / "busy", [_frame([10], "a1")])
    write_batches(workdir / "idle", [_frame([5], "b1")])
    busy = _writer(spark, workdir, state_name, "busy")
    idle = _writer(spark, workdir, state_name, "idle", idleTimeout="2 seconds")
    drained(busy)
    drained(idle)
    write_batches(workdir / "busy", [_frame([60, 70], "a2")], first_index=1)
    drained(busy)
    wait_until(lambda: _status(state, idle) == "paused", 60, "the idle writer to be paused")
    wait_until(lambda: state.progress()["update"] == _secs(70)[0], 60, "U to follow the busy writer alone")
    # input again: the writer rejoins at the current U; its update below U is late, the newer one counts
    write_batches(workdir / "idle", [_frame([30, 90], "b2")], first_index=1)
    drained(idle)
    assert _status(state, idle) == "active"
    late = state.late_updates().toPandas()
    assert list(late["reason"]) == ["late"] and list(late["time"].dt.tz_localize("UTC")) == list(_secs(30))
    busy.stop()
    idle.stop()


def test_updates_far_ahead_of_the_clock_are_rejected_and_never_move_u(spark, workdir, state_name):
    state = ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=2)
    typo = pd.DataFrame(
        {
            "ad_id": ["a", "b"],
            "ts": [pd.Timestamp("2026-01-01 00:00:10", tz="UTC"), pd.Timestamp("9999-12-31 00:00:00", tz="UTC")],
            "campaign": ["ok", "typo"],
        }
    )
    write_batches(workdir / "w", [typo])
    w = _writer(spark, workdir, state_name, "w")
    drained(w)
    [late] = state.late_updates().collect()
    assert (late.reason, late.value.campaign, late.time) == ("ahead_of_clock", "typo", datetime(9999, 12, 31))
    assert state.progress()["update"] == pd.Timestamp("2026-01-01 00:00:10", tz="UTC")
    write_batches(workdir / "w", [_frame([20], "later")], first_index=1)
    write_batches(
        workdir / "w",
        [pd.DataFrame({"ad_id": ["c"], "ts": [pd.Timestamp("2026-01-01 00:00:30", tz="UTC")], "campaign": ["x"]})],
        first_index=2,
    )
    drained(w)
    assert state.progress()["update"] == pd.Timestamp("2026-01-01 00:00:30", tz="UTC"), "later normal updates count"
    w.stop()
    # a replay of future-dated data turns the bound off
    replay = ss.State.create(spark, state_name + "_replay", key="ad_id STRING", value="campaign STRING")
    r = (
        spark.readStream.schema(UPDATE_SCHEMA)
        .parquet(str(workdir / "w"))
        .writeStream.format("sharedstate")
        .option("state", replay.name)
        .option("key", "ad_id")
        .option("time", "ts")
        .option("maxAhead", "off")
        .option("checkpointLocation", str(workdir / "ck-replay"))
        .start()
    )
    drained(r)
    assert replay.late_updates().count() == 0
    assert replay.progress()["update"] == datetime(9999, 12, 31, tzinfo=UTC)
    r.stop()


def test_writers_and_readers_are_listed_finished_and_removed(spark, workdir, state_name):
    state = ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=2)
    write_batches(workdir / "w", [_frame([10, 20], "a")])
    w = _writer(spark, workdir, state_name, "w")
    drained(w)
    [listed] = state.writers()
    assert listed["writer"] == str(w.id) and listed["status"] == "active" and listed["last_epoch"] >= 0
    assert listed["progress"] == _secs(20)[0]
    with pytest.raises(ss.SharedStateError, match=f"State '{state_name}' has no writer 'nobody'. Its writers: {w.id}"):
        state.finish_writer("nobody")
    state.finish_writer(str(w.id))
    assert state.writers()[0]["status"] == "finished"
    assert state.progress()["update_is"] == "+infinity", "every writer finished: every value is final"
    w.stop()
    state.remove_writer(str(w.id))
    assert state.writers() == []
    changes = (
        state.changes()
        .writeStream.format("memory")
        .queryName(f"ch_{state_name}")
        .option("checkpointLocation", str(workdir / "ck-ch"))
        .start()
    )
    drained(changes)
    [reader] = state.readers()
    assert reader.startswith("change-stream:")
    changes.stop()
    state.remove_reader(reader)
    assert state.readers() == {}
    with pytest.raises(ss.SharedStateError, match="has no reader 'nobody'"):
        state.remove_reader("nobody")
