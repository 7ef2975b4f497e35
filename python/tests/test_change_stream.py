"""The change stream of a State (State.changes) in micro-batch and continuous mode, on randomised
out-of-order updates: every accepted update below the final U arrives exactly once, micro-batches
follow timestamp order, and (local mode: one reader on the merged change feed) the whole stream is in
global timestamp order."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from pyspark.sql import functions as F

import sharedstate as ss
from sharedstate.testing.adcamp import UPDATE_SCHEMA, accepted_updates, make_workload, write_batches
from sharedstate.testing.streams import wait_until


def _write(spark, workdir, state_name, seed: int, partitions: int):
    work = make_workload(seed, events=10)
    write_batches(workdir / "updates", work.update_batches)
    state = ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=partitions)
    updates = spark.readStream.schema(UPDATE_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(workdir / "updates"))
    writer = (
        updates.writeStream.format("sharedstate")
        .option("state", state_name)
        .option("key", "ad_id")
        .option("time", "ts")
        .option("value", "campaign")
        .option("lateness", "20 seconds")
        .option("checkpointLocation", str(workdir / "ck-updates"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    return work, state, writer


def _expected(work, u) -> set:
    history = accepted_updates(work)
    history["ts"] = pd.to_datetime(history["ts"], utc=True)
    below = history[history["ts"] < pd.Timestamp(u)]
    return set(zip(below["ad_id"], below["campaign"], below["ts"]))


def _files_read(writer) -> int:
    end = (writer.lastProgress or {}).get("sources", [{}])[0].get("endOffset")
    end = json.loads(end) if isinstance(end, str) else (end or {})
    return int(end.get("logOffset", -1)) + 1


def _final_u(state, writer, total_batches: int):
    wait_until(
        lambda: writer.exception() is not None or _files_read(writer) >= total_batches,
        timeout=180,
        what="the writer to read every update file",
    )
    # the batch that read the last file has committed once the writer's progress reports it
    wait_until(lambda: state.progress()["update"] is not None and _files_read(writer) >= total_batches, timeout=30)
    assert writer.exception() is None, writer.exception()
    return state.progress()["update"]


def test_micro_batch_change_stream_delivers_each_final_update_once_in_time_order(spark, workdir, state_name):
    work, state, writer = _write(spark, workdir, state_name, seed=21, partitions=3)
    batches: dict[int, pd.DataFrame] = {}

    def keep(df, batch_id):
        batches[batch_id] = df.withColumn("p", F.spark_partition_id()).toPandas()

    changes = (
        state.changes()
        .writeStream.foreachBatch(keep)
        .option("checkpointLocation", str(workdir / "ck-changes"))
        .trigger(processingTime="300 milliseconds")
        .start()
    )
    u = _final_u(state, writer, len(work.update_batches))
    expected = _expected(work, u)
    time_col = state.time_column

    def caught_up() -> bool:
        assert changes.exception() is None, changes.exception()
        return sum(len(b) for b in batches.values()) >= len(expected)

    wait_until(caught_up, timeout=120, what=f"{len(expected)} changes")
    changes.stop()
    writer.stop()
    rows = pd.concat([b.assign(batch=i) for i, b in sorted(batches.items())], ignore_index=True)
    rows[time_col] = pd.to_datetime(rows[time_col], utc=True)
    got = list(zip(rows["ad_id"], rows["campaign"], rows[time_col]))
    assert len(got) == len(set(got)), "a change was delivered twice"
    assert set(got) == expected
    nonempty = [b for _, b in sorted(batches.items()) if len(b)]
    assert len(nonempty) >= 3, "changes arrived over several micro-batches"
    for a, b in zip(nonempty, nonempty[1:]):
        assert pd.to_datetime(a[time_col], utc=True).max() < pd.to_datetime(b[time_col], utc=True).min()
    for _, part in rows.groupby(["batch", "p"]):
        assert part[time_col].is_monotonic_increasing
    # Local mode reads the change feed: one Spark partition per batch, merged across the State's
    # partitions, so each batch (and the whole stream) is in global timestamp order.
    assert rows.groupby("batch")["p"].nunique().max() == 1
    assert rows[time_col].is_monotonic_increasing, "the stream is in global timestamp order"


def test_continuous_change_stream_delivers_each_final_update_once(spark, workdir, state_name):
    work, state, writer = _write(spark, workdir, state_name, seed=22, partitions=2)
    out = f"changes_{state_name}"
    changes = (
        state.changes()
        .writeStream.format("memory")
        .queryName(out)
        .option("checkpointLocation", str(workdir / "ck-changes"))
        .trigger(continuous="200 milliseconds")
        .start()
    )
    u = _final_u(state, writer, len(work.update_batches))
    expected = _expected(work, u)

    def caught_up() -> bool:
        assert changes.exception() is None, changes.exception()
        return spark.table(out).count() >= len(expected)

    wait_until(caught_up, timeout=120, what=f"{len(expected)} changes")
    changes.stop()
    writer.stop()
    rows = spark.table(out).toPandas()
    rows[state.time_column] = pd.to_datetime(rows[state.time_column], utc=True)
    got = list(zip(rows["ad_id"], rows["campaign"], rows[state.time_column]))
    assert len(got) == len(set(got)), "a change was delivered twice"
    assert set(got) == expected
    # One continuous reader on the merged feed (local mode): the memory sink keeps its rows in order.
    assert rows[state.time_column].is_monotonic_increasing, "the continuous stream is in global timestamp order"


def test_change_stream_options_are_checked(spark, state_name):
    ss.State.create(spark, state_name, key="k STRING", value="v BIGINT")
    with pytest.raises(Exception, match="startingOffsets.*earliest"):
        spark.readStream.format("sharedstate").option("state", state_name).option("startingOffsets", "newest").load()
    with pytest.raises(Exception, match="asOf"):
        q = (
            spark.readStream.format("sharedstate")
            .option("state", state_name)
            .option("asOf", "2026-01-01 00:00:00")
            .load()
            .writeStream.format("memory")
            .queryName(f"bad_{state_name}")
            .start()
        )
        q.processAllAvailable()
    with pytest.raises(Exception, match="Unknown read option.*asof_typo"):
        spark.read.format("sharedstate").option("state", state_name).option("asof_typo", "x").load().collect()


def test_micro_batch_change_stream_restarted_from_its_checkpoint_misses_and_repeats_nothing(spark, workdir, state_name):
    """A restarted query opens a new change subscription at its checkpointed offset: the part below
    the feed's position is read from the State, the rest from the feed, with no pair twice or missed."""
    work, state, writer = _write(spark, workdir, state_name, seed=23, partitions=3)
    batches: dict[int, pd.DataFrame] = {}

    def keep(df, batch_id):  # a batch replayed after the stop replaces its first run (foreachBatch is at-least-once)
        batches[batch_id] = df.toPandas()

    def start():
        return (
            state.changes()
            .writeStream.foreachBatch(keep)
            .option("checkpointLocation", str(workdir / "ck-changes"))
            .trigger(processingTime="300 milliseconds")
            .start()
        )

    first = start()
    wait_until(
        lambda: first.exception() is not None or sum(len(b) for b in batches.values()) > 0,
        timeout=120,
        what="the first changes",
    )
    assert first.exception() is None, first.exception()
    first.stop()
    u = _final_u(state, writer, len(work.update_batches))  # U moves on while the change query is down
    expected = _expected(work, u)
    second = start()

    def caught_up() -> bool:
        assert second.exception() is None, second.exception()
        return sum(len(b) for b in batches.values()) >= len(expected)

    wait_until(caught_up, timeout=120, what=f"{len(expected)} changes")
    second.stop()
    writer.stop()
    time_col = state.time_column
    rows = pd.concat([b for _, b in sorted(batches.items())], ignore_index=True)
    rows[time_col] = pd.to_datetime(rows[time_col], utc=True)
    got = list(zip(rows["ad_id"], rows["campaign"], rows[time_col]))
    assert len(got) == len(set(got)), "a change was delivered twice across the restart"
    assert set(got) == expected
    assert rows[time_col].is_monotonic_increasing
