"""Two fetch joins in one query, the second on the first's output (as in demos/cf.py): events joined
with a user -> item State, then with an item -> label State. An event that was on time when it
arrived comes out of both joins: with no lateness and no watermark of the user's, also one that
arrives after both States' U (and the query's internal watermark of their progress ticks) passed its
time; with a watermark, also one the watermark passed while it waited in the first join."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

import sharedstate as ss
from sharedstate.testing.adcamp import write_batches
from sharedstate.testing.streams import drained

EVENTS = "event_id BIGINT, user STRING, ts TIMESTAMP"


def seconds(*s: float) -> pd.DatetimeIndex:
    return pd.to_datetime(list(s), unit="s", utc=True)


@dataclass
class Writer:
    """A writer query into State `name` from the parquet files of `directory`, one file per `add`."""

    query: object
    directory: Path
    key: str
    value: str
    files: int = 1

    def add(self, key: str, value: str, t: float) -> None:
        frame = pd.DataFrame({self.key: [key], self.value: [value], "ts": seconds(t)})
        write_batches(self.directory, [frame], start_mtime=time.time(), first_index=self.files)
        self.files += 1
        self.query.processAllAvailable()


def _writer(spark, workdir: Path, name: str, key: str, value: str, rows: dict) -> Writer:
    directory = workdir / f"in-{name}"
    write_batches(directory, [pd.DataFrame(rows)])
    query = (
        spark.readStream.schema(f"{key} STRING, {value} STRING, ts TIMESTAMP")
        .parquet(str(directory))
        .writeStream.format("sharedstate")
        .option("state", name)
        .option("key", key)
        .option("time", "ts")
        .option("checkpointLocation", str(workdir / f"ck-{name}"))
        .start()
    )
    query.processAllAvailable()
    return Writer(query, directory, key, value)


def _chained(spark, workdir: Path, state_name: str, items_until: float, watermark: str | None):
    """The two States (users' U = 2 s, items' U = `items_until`) and the chained query over the
    events of workdir/events (the first file already there); returns the writers, the query and
    its memory table."""
    users, items = f"{state_name}_users", f"{state_name}_items"
    ss.State.create(spark, users, key="user STRING", value="item STRING")
    ss.State.create(spark, items, key="item STRING", value="label STRING")
    user_writer = _writer(
        spark, workdir, users, "user", "item", {"user": ["u1", "u2"], "item": ["i1", "i2"], "ts": seconds(1, 2)}
    )
    item_rows = {"item": ["i1", "i2", "end"], "label": ["a", "b", "-"], "ts": seconds(1, 2, items_until)}
    item_writer = _writer(spark, workdir, items, "item", "label", item_rows)
    events = spark.readStream.schema(EVENTS).option("maxFilesPerTrigger", 1).parquet(str(workdir / "events"))
    if watermark:
        events = events.withWatermark("ts", watermark)
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
    return user_writer, item_writer, reader, out


def _event(workdir: Path, index: int, event_id: int, user: str, t: float) -> None:
    frame = pd.DataFrame({"event_id": [event_id], "user": [user], "ts": seconds(t)})
    write_batches(workdir / "events", [frame], start_mtime=time.time(), first_index=index)


def _tick_batches(item_writer: Writer, reader, times: tuple[float, ...]) -> None:
    """Moves the items' U step by step: micro-batches that read only progress ticks."""
    for t in times:
        item_writer.add("end", "-", t)
        drained(reader)


def _labels(spark, out: str) -> tuple[list, list]:
    got = spark.table(out).toPandas().sort_values("event_id")
    return got["event_id"].tolist(), got["label"].tolist()


def test_an_event_older_than_both_states_u_passes_both_joins(spark, workdir, state_name):
    _event(workdir, 0, 1, "u1", 90)
    user_writer, item_writer, reader, out = _chained(spark, workdir, state_name, items_until=100, watermark=None)
    user_writer.add("end", "-", 100)
    drained(reader)
    assert spark.table(out).count() == 1  # event 1 waited in the first join for U, then passed both
    # the query's watermark of its progress ticks reaches both States' U (100 s)
    _tick_batches(item_writer, reader, (110, 120, 130))

    _event(workdir, 1, 2, "u2", 50)  # below both U; on time: the events have no lateness
    drained(reader)
    assert _labels(spark, out) == ([1, 2], ["a", "b"]), "an event with no lateness set was dropped as late"


def test_with_a_watermark_an_event_that_waited_in_the_first_join_is_not_late_in_the_second(spark, workdir, state_name):
    _event(workdir, 0, 1, "u1", 50)
    user_writer, item_writer, reader, out = _chained(
        spark, workdir, state_name, items_until=1000, watermark="10 seconds"
    )
    drained(reader)
    _event(workdir, 1, 2, "u2", 200)
    drained(reader)
    # the events' watermark (190 s) passes event 1 while it waits for the users' U
    _tick_batches(item_writer, reader, (1010, 1020, 1030))
    assert spark.table(out).count() == 0, "both events wait for the users' U"

    user_writer.add("end", "-", 300)
    drained(reader)
    assert _labels(spark, out) == ([1, 2], ["a", "b"]), "an event that waited in the first join was dropped as late"
