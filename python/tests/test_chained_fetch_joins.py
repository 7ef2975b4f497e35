"""Two fetch joins in one query, the second on the first's output (as in demos/cf.py), with no
lateness and no watermark of the user's: no event is ever late, so every event comes out, also one
that arrives after both States' U (and the query's internal watermark of their progress ticks)
passed its time."""

from __future__ import annotations

import time

import pandas as pd

import sharedstate as ss
from sharedstate.testing.adcamp import write_batches
from sharedstate.testing.streams import drained

EVENTS = "event_id BIGINT, user STRING, ts TIMESTAMP"


def _writer(spark, workdir, name, key, value, rows):
    schema = f"{key} STRING, {value} STRING, ts TIMESTAMP"
    write_batches(workdir / f"in-{name}", [pd.DataFrame(rows)])
    query = (
        spark.readStream.schema(schema)
        .parquet(str(workdir / f"in-{name}"))
        .writeStream.format("sharedstate")
        .option("state", name)
        .option("key", key)
        .option("time", "ts")
        .option("checkpointLocation", str(workdir / f"ck-{name}"))
        .start()
    )
    query.processAllAvailable()
    return query


def test_an_event_older_than_both_states_u_passes_both_joins(spark, workdir, state_name):
    users, items = f"{state_name}_users", f"{state_name}_items"
    ss.State.create(spark, users, key="user STRING", value="item STRING")
    ss.State.create(spark, items, key="item STRING", value="label STRING")
    seconds = lambda *s: pd.to_datetime(list(s), unit="s", utc=True)  # noqa: E731
    user_writer = _writer(
        spark, workdir, users, "user", "item", {"user": ["u1", "u2"], "item": ["i1", "i2"], "ts": seconds(1, 2)}
    )
    item_rows = {"item": ["i1", "i2", "end"], "label": ["a", "b", "-"], "ts": seconds(1, 2, 100)}
    item_writer = _writer(spark, workdir, items, "item", "label", item_rows)
    # users: U = 2 s, items: U = 100 s; the users State gets its own closing update below

    events_dir = workdir / "events"
    write_batches(events_dir, [pd.DataFrame({"event_id": [1], "user": ["u1"], "ts": seconds(90)})])
    events = spark.readStream.schema(EVENTS).option("maxFilesPerTrigger", 1).parquet(str(events_dir))
    with_item = ss.fetch_join(events, users, key="user", time="ts")
    with_label = ss.fetch_join(with_item, items, key="item", time="ts")
    out = f"out_{state_name}"
    reader = (
        with_label.writeStream.format("memory")
        .queryName(out)
        .option("checkpointLocation", str(workdir / "ck-out"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    closing = pd.DataFrame({"user": ["end"], "item": ["-"], "ts": seconds(100)})
    write_batches(workdir / f"in-{users}", [closing], start_mtime=time.time(), first_index=1)
    user_writer.processAllAvailable()
    drained(reader)
    assert spark.table(out).count() == 1  # event 1 waited in the first join for U, then passed both
    # a few more U steps: micro-batches that read only ticks, so the query's watermark of its progress
    # ticks reaches both States' U
    for i, t in enumerate((110, 120, 130), start=1):
        step = pd.DataFrame({"item": ["end"], "label": ["-"], "ts": seconds(t)})
        write_batches(workdir / f"in-{items}", [step], start_mtime=time.time(), first_index=i)
        item_writer.processAllAvailable()
        drained(reader)

    # Now both States' U (100 s) are past the event times; a new event at 50 s is on time (no lateness).
    write_batches(
        events_dir,
        [pd.DataFrame({"event_id": [2], "user": ["u2"], "ts": seconds(50)})],
        start_mtime=time.time(),
        first_index=1,
    )
    drained(reader)
    got = spark.table(out).toPandas().sort_values("event_id")
    assert got["event_id"].tolist() == [1, 2], "an event with no lateness set was dropped as late"
    assert got["label"].tolist() == ["a", "b"]


def test_with_a_watermark_an_event_that_waited_in_the_first_join_is_not_late_in_the_second(spark, workdir, state_name):
    """The events' watermark passes an event while it waits for the first State's U; when that join
    answers it, the second join takes it (it was on time when it arrived), as it does the others."""
    users, items = f"{state_name}_users", f"{state_name}_items"
    ss.State.create(spark, users, key="user STRING", value="item STRING")
    ss.State.create(spark, items, key="item STRING", value="label STRING")
    seconds = lambda *s: pd.to_datetime(list(s), unit="s", utc=True)  # noqa: E731
    user_writer = _writer(
        spark, workdir, users, "user", "item", {"user": ["u1", "u2"], "item": ["i1", "i2"], "ts": seconds(1, 2)}
    )
    item_rows = {"item": ["i1", "i2", "end"], "label": ["a", "b", "-"], "ts": seconds(1, 2, 1000)}
    item_writer = _writer(spark, workdir, items, "item", "label", item_rows)

    events_dir = workdir / "events"
    first = pd.DataFrame({"event_id": [1], "user": ["u1"], "ts": seconds(50)})
    write_batches(events_dir, [first], start_mtime=time.time())
    events = (
        spark.readStream.schema(EVENTS)
        .option("maxFilesPerTrigger", 1)
        .parquet(str(events_dir))
        .withWatermark("ts", "10 seconds")
    )
    with_item = ss.fetch_join(events, users, key="user", time="ts")
    with_label = ss.fetch_join(with_item, items, key="item", time="ts")
    out = f"out_{state_name}"
    reader = (
        with_label.writeStream.format("memory")
        .queryName(out)
        .option("checkpointLocation", str(workdir / "ck-out"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    drained(reader)
    second = pd.DataFrame({"event_id": [2], "user": ["u2"], "ts": seconds(200)})
    write_batches(events_dir, [second], start_mtime=time.time(), first_index=1)
    drained(reader)
    # batches that read only ticks: the watermark (190 s) passes event 1, still waiting for the users' U
    for i, t in enumerate((1010, 1020, 1030), start=1):
        step = pd.DataFrame({"item": ["end"], "label": ["-"], "ts": seconds(t)})
        write_batches(workdir / f"in-{items}", [step], start_mtime=time.time(), first_index=i)
        item_writer.processAllAvailable()
        drained(reader)
    assert spark.table(out).count() == 0, "both events wait for the users' U"

    closing = pd.DataFrame({"user": ["end"], "item": ["-"], "ts": seconds(300)})
    write_batches(workdir / f"in-{users}", [closing], start_mtime=time.time(), first_index=1)
    user_writer.processAllAvailable()
    drained(reader)
    got = spark.table(out).toPandas().sort_values("event_id")
    assert got["event_id"].tolist() == [1, 2], "an event that waited in the first join was dropped as late"
    assert got["label"].tolist() == ["a", "b"]
