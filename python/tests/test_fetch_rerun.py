"""A micro-batch that runs again (the query failed after the sink committed it, before Spark's commit
log did, and is restarted from its checkpoint) must answer exactly the events its first attempt
answered, even though U has moved on since:
an idempotent sink keeps the first attempt's rows, so anything the re-run answered in addition would
be lost, and anything it left waiting again would be emitted twice. With a lateness, the re-run also
counts the same rows late (none here: the lateness is wide), from the F recorded for the batch."""

from __future__ import annotations

import pandas as pd
import pytest

import sharedstate as ss
from sharedstate.testing.adcamp import EVENT_SCHEMA, UPDATE_SCHEMA, write_batches
from sharedstate.testing.streams import drained, wait_until


def _updates(times, keys, campaigns):
    return pd.DataFrame({"ad_id": keys, "campaign": campaigns, "ts": pd.to_datetime(times, unit="s", utc=True)})


def _events(ids, times):
    return pd.DataFrame(
        {
            "event_id": ids,
            "user_id": "u",
            "ad_id": "a",
            "ts": pd.to_datetime(times, unit="s", utc=True),
            "clicked": False,
        }
    )


class _SinkThatCrashesOnce:
    """A foreachBatch sink that keeps every attempt's (event_id, campaign) rows per batch and fails the
    first batch with rows after taking them (`before_crash` runs first): a driver that dies between
    the sink's commit and Spark's commit log."""

    def __init__(self, before_crash=lambda: None):
        self.attempts: dict[int, list[list[tuple]]] = {}
        self.crashed: list[int] = []
        self.before_crash = before_crash

    def __call__(self, df, batch_id):
        rows = sorted((r["event_id"], r["campaign"]) for r in df.collect())
        self.attempts.setdefault(batch_id, []).append(rows)
        if rows and not self.crashed:
            self.before_crash()
            self.crashed.append(batch_id)
            raise RuntimeError("simulated crash after the sink committed")


def _state_at_25_seconds(spark, workdir, state_name):
    """A State of ads' campaigns ('a' -> c1 at 5 s) and its running writer query, U at 25 s."""
    ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=2)
    write_batches(workdir / "updates", [_updates([5, 25], ["a", "z"], ["c1", "u25"])])
    writer = (
        spark.readStream.schema(UPDATE_SCHEMA)
        .parquet(str(workdir / "updates"))
        .writeStream.format("sharedstate")
        .option("state", state_name)
        .option("key", "ad_id")
        .option("time", "ts")
        .option("checkpointLocation", str(workdir / "ck-updates"))
        .start()
    )
    drained(writer)
    return writer


def _move_u_to_100_seconds(workdir, writer):
    """A later update of 'a' at 35 s (c2), and U to 100 s."""
    write_batches(workdir / "updates", [_updates([35, 100], ["a", "z"], ["c2", "u100"])], first_index=1)
    drained(writer)


@pytest.mark.parametrize("lateness", [None, "100 seconds"])
def test_a_rerun_batch_answers_what_its_first_attempt_answered(spark, workdir, state_name, lateness):
    writer = _state_at_25_seconds(spark, workdir, state_name)

    write_batches(workdir / "events", [_events(range(1, 7), [10, 20, 30, 40, 50, 60])])

    # Between the sink's commit and Spark's commit log U moves on, then the driver "dies".
    sink = _SinkThatCrashesOnce(before_crash=lambda: _move_u_to_100_seconds(workdir, writer))
    attempts, crashed = sink.attempts, sink.crashed

    queries = []

    def start():
        stream = spark.readStream.schema(EVENT_SCHEMA).parquet(str(workdir / "events"))
        queries.append(
            ss.fetch_join(stream, state_name, key="ad_id", time="ts", lateness=lateness)
            .select("event_id", "campaign")
            .writeStream.foreachBatch(sink)
            .option("checkpointLocation", str(workdir / "ck-events"))
            .trigger(processingTime="200 milliseconds")
            .start()
        )
        return queries[-1]

    first = start()
    wait_until(lambda: crashed and not first.isActive, 120, what="the first attempt to fail")
    second = start()
    drained(second)  # the re-run of the failed batch, then the tick of U's step to 100 s
    second.stop()
    writer.stop()

    batch = crashed[0]
    assert attempts[batch][0] == [(1, "c1"), (2, "c1")], "U was 25 s: only events before it"
    assert attempts[batch][1] == attempts[batch][0], "the re-run answers exactly what the first attempt did"
    # An idempotent sink keeps each batch's first attempt: every event once, with the as-of answer.
    kept = sorted(r for b in sorted(attempts) for r in attempts[b][0])
    assert kept == [(1, "c1"), (2, "c1"), (3, "c1"), (4, "c2"), (5, "c2"), (6, "c2")]


def test_a_rerun_in_the_same_driver_with_another_number_of_input_partitions(spark, workdir, state_name):
    """The failed run's batch wrote its waiting events in one file per task; restarted in the same
    driver, the re-run of that batch reads its input in fewer partitions. Its tasks must start from
    an empty directory (as after a new driver), or the next batch finds two part counts mixed."""
    writer = _state_at_25_seconds(spark, workdir, state_name)

    # two files: two input partitions by default, one with minPartitionNum = 1
    write_batches(workdir / "events", [_events([1, 2, 3], [10, 30, 50]), _events([4, 5, 6], [20, 40, 60])])
    sink = _SinkThatCrashesOnce()
    attempts, crashed = sink.attempts, sink.crashed

    def start():
        stream = spark.readStream.schema(EVENT_SCHEMA).parquet(str(workdir / "events"))
        return (
            ss.fetch_join(stream, state_name, key="ad_id", time="ts")
            .select("event_id", "campaign")
            .writeStream.foreachBatch(sink)
            .option("checkpointLocation", str(workdir / "ck-events"))
            .trigger(processingTime="200 milliseconds")
            .start()
        )

    def part_counts(batch: int) -> set[str]:
        files = (workdir / "ck-events" / "sources").glob(f"*/fetch-waiting/{batch}/part-*")
        return {f.name.split("-of-")[1] for f in files if not f.name.startswith(".")}

    first = start()
    wait_until(lambda: crashed and not first.isActive, 120, what="the first attempt to fail")
    batch = crashed[0]
    before = part_counts(batch)
    assert len(before) == 1, before
    spark.conf.set("spark.sql.files.minPartitionNum", "1")
    try:
        second = start()
        drained(second)  # the re-run of the failed batch, in fewer partitions
        after = part_counts(batch)
        assert len(after) == 1 and after != before, (before, after)
        # U moves on: the next batch takes over the re-run's waiting events and answers them
        _move_u_to_100_seconds(workdir, writer)
        drained(second)
        assert second.exception() is None
        second.stop()
    finally:
        spark.conf.unset("spark.sql.files.minPartitionNum")
        writer.stop()

    assert attempts[batch][0] == [(1, "c1"), (4, "c1")], "U was 25 s: only events before it"
    assert attempts[batch][1] == attempts[batch][0], "the re-run answers exactly what the first attempt did"
    kept = sorted(r for b in sorted(attempts) for r in attempts[b][0])
    assert kept == [(1, "c1"), (2, "c1"), (3, "c2"), (4, "c1"), (5, "c2"), (6, "c2")]
