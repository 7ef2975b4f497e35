"""Range and range-aggregate fetch joins, and the fetch side's progress F and metrics, on randomised
out-of-order input, checked against an offline computation over the whole accepted update history."""

from __future__ import annotations

import pandas as pd
import pytest

import sharedstate as ss
from sharedstate.testing.adcamp import EVENT_SCHEMA, make_workload, write_batches
from sharedstate.testing.oracles import NUMERIC_UPDATES, fetched_values, mismatches, numeric, range_expected
from sharedstate.testing.streams import drained, wait_until

WINDOW_S = 90


def _expected(work, rule: str) -> pd.DataFrame:
    return range_expected(work, rule, WINDOW_S)


def _ints(column: pd.Series) -> list:
    """Nullable numbers as Python ints and None (pandas turns an int column with nulls into floats)."""
    return [None if pd.isna(x) else int(x) for x in column]


def _start(
    spark,
    workdir,
    state_name,
    seed: int,
    rule: str,
    how: str,
    lateness: str | None = None,
    watermark: str | None = None,
):
    work = make_workload(seed, events=400)
    write_batches(workdir / "updates", [numeric(b) for b in work.update_batches])
    write_batches(workdir / "events", work.event_batches)
    ss.State.create(spark, state_name, key="ad_id STRING", value="v BIGINT", partitions=3)
    events = spark.readStream.schema(EVENT_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(workdir / "events"))
    if watermark is not None:
        events = events.withWatermark("ts", watermark)
    joined = ss.fetch_join(
        events, state_name, key="ad_id", time="ts", rule=rule, window=f"{WINDOW_S} seconds", how=how, lateness=lateness
    )
    out_name = f"out_{state_name}"
    reader = (
        joined.writeStream.format("memory")
        .queryName(out_name)
        .outputMode("append")
        .option("checkpointLocation", str(workdir / "ck-events"))
        .trigger(processingTime="300 milliseconds")
        .start()
    )
    # updates start once events are flowing, so events wait for U in checkpointed state
    wait_until(lambda: reader.lastProgress is not None, timeout=60, what="the fetch-join query's first batch")
    updates = spark.readStream.schema(NUMERIC_UPDATES).option("maxFilesPerTrigger", 1).parquet(str(workdir / "updates"))
    writer = (
        updates.writeStream.format("sharedstate")
        .option("state", state_name)
        .option("key", "ad_id")
        .option("time", "ts")
        .option("value", "v")
        .option("lateness", "20 seconds")
        .option("checkpointLocation", str(workdir / "ck-updates"))
        .trigger(processingTime="300 milliseconds")
        .start()
    )
    return work, writer, reader, out_name


def _collect(spark, writer, reader, out_name: str, expected_rows: int, seen: list | None = None) -> pd.DataFrame:
    """Waits for `expected_rows` output rows and three more batches; `seen` gets each batch's progress."""

    def done() -> bool:
        for q in (writer, reader):
            if q.exception() is not None:
                raise AssertionError(f"query failed: {q.exception()}")
        if seen is not None:
            for p in reader.recentProgress:
                if p["batchId"] not in {s["batchId"] for s in seen}:
                    seen.append(p)
        return spark.table(out_name).count() >= expected_rows

    wait_until(done, timeout=300, interval=0.2, what=f"{expected_rows} fetch-join rows")
    # once the input is processed and U stops, the query goes idle (no batches back to back)
    drained(writer)
    drained(reader)
    done()
    return spark.table(out_name).toPandas()


@pytest.mark.parametrize("rule", ["range", "sum", "count"])
def test_range_and_aggregate_fetch_joins_equal_offline_computation(spark, workdir, state_name, rule):
    work, writer, reader, out_name = _start(spark, workdir, state_name, seed=5, rule=rule, how="left")
    expected = _expected(work, rule)
    got = _collect(spark, writer, reader, out_name, len(expected))
    assert got["event_id"].is_unique and len(got) == len(expected)
    got = got.sort_values("event_id").reset_index(drop=True)
    mismatched = mismatches(got["event_id"], fetched_values(got, state_name, rule), list(expected["value"]))
    assert not mismatched, f"{len(mismatched)} rows differ, first: {mismatched[:3]}"
    # the input exercised the window: empty ranges and ranges of several pairs both occur
    sizes = expected["value"].map(len) if rule == "range" else None
    if sizes is not None:
        assert (sizes == 0).any() and (sizes >= 2).any()


def test_inner_count_drops_events_with_an_empty_range(spark, workdir, state_name):
    work, writer, reader, out_name = _start(spark, workdir, state_name, seed=8, rule="count", how="inner")
    expected = _expected(work, "count")
    expected = expected[expected["value"] > 0].reset_index(drop=True)
    got = _collect(spark, writer, reader, out_name, len(expected)).sort_values("event_id").reset_index(drop=True)
    assert list(got["event_id"]) == list(expected["event_id"])
    assert list(got[f"{state_name}_count"]) == list(expected["value"])


def test_fetch_join_reports_fetch_progress_and_metrics(spark, workdir, state_name):
    work, writer, reader, out_name = _start(
        spark, workdir, state_name, seed=9, rule="sum", how="left", lateness="30 seconds"
    )
    expected = _expected(work, "sum")
    seen: list = []
    got = _collect(spark, writer, reader, out_name, len(expected), seen).sort_values("event_id").reset_index(drop=True)
    # events arrive at most 20 s out of order and the lateness is 30 s: none is late
    assert list(got["event_id"]) == list(expected["event_id"]) and _ints(got["sum_v"]) == list(expected["value"])

    name = f"sharedstate_fetch:{state_name}:{WINDOW_S * 1_000_000}:{30 * 1_000_000}:0"
    metrics = [p["observedMetrics"][name] for p in seen if name in p["observedMetrics"]]
    assert metrics, "the join's metrics are in the query's progress"
    assert sum(m["lateEvents"] for m in metrics) == 0
    assert max(m["eventsLeftWaiting"] for m in metrics) > 0, f"events waited for U in some batch: {metrics}"
    assert max(m["fetchWaitMsMax"] or 0 for m in metrics) > 0
    assert metrics[-1]["eventsLeftWaiting"] == 0, "no event waits after the batch that answered the last ones"
    # every event is answered once, in the batch that emits it; waits average between 0 and their max
    assert sum(m["eventsAnswered"] for m in metrics) == len(got)
    for m in metrics:
        if m["eventsAnswered"]:
            assert 0 <= m["fetchWaitMsAvg"] <= m["fetchWaitMsMax"]
        else:
            assert m["fetchWaitMsAvg"] is None and m["fetchWaitMsMax"] is None
    # F = min(latest event - lateness, earliest waiting event, watermark) - window, after each batch
    latest = pd.Timestamp(max(work.events["ts"]))
    progress = ss.State.get(spark, state_name).progress()
    f = pd.Timestamp(progress["fetch"])
    assert f <= latest - pd.Timedelta(seconds=30 + WINDOW_S)
    assert f > pd.Timestamp(0, tz="UTC") + pd.Timedelta(seconds=60), "F advanced with the events"
    readers = [r for r in progress["readers"] if str(reader.id) in r]
    assert len(readers) == 1
    reader.stop()
    writer.stop()
    wait_until(
        lambda: not any(str(reader.id) in r for r in ss.State.get(spark, state_name).progress()["readers"]),
        timeout=10,
        what="the stopped query's reader to be removed",
    )


def _answered_and_late(reader, seen: list, name: str) -> tuple[int, int]:
    """Events the join answered and counted late so far, summed over its batches' metrics (`seen` keeps them)."""
    for p in reader.recentProgress:
        if p["batchId"] not in {s["batchId"] for s in seen}:
            seen.append(p)
    metrics = [p["observedMetrics"][name] for p in seen if name in p["observedMetrics"]]
    return sum(m["eventsAnswered"] for m in metrics), sum(m["lateEvents"] for m in metrics)


def _every_event_answered_or_late(spark, writer, reader, out_name, expected, totals) -> tuple[int, int]:
    """Waits until every event is answered or late, never both, never neither; answers equal the oracle."""
    wait_until(lambda: sum(totals()) >= len(expected), timeout=300, interval=0.2, what="every event answered or late")
    drained(writer)
    drained(reader)
    answered, late = totals()
    got = spark.table(out_name).toPandas()
    assert answered + late == len(expected) and len(got) == answered and got["event_id"].is_unique
    assert _ints(got["sum_v"]) == list(expected.loc[got["event_id"], "value"])
    return answered, late


def test_late_events_are_counted_not_answered(spark, workdir, state_name):
    """With no lateness, events behind the join's F are late: each event is either answered (and in the
    output, equal to the offline answer) or counted late, never both, never neither. Events that arrive
    after the join has seen newer ones and nothing waits are late for certain."""
    work, writer, reader, out_name = _start(
        spark, workdir, state_name, seed=12, rule="sum", how="left", lateness="0 seconds"
    )
    expected = _expected(work, "sum").set_index("event_id")
    seen: list = []
    name = f"sharedstate_fetch:{state_name}:{WINDOW_S * 1_000_000}:0:0"

    def totals() -> tuple[int, int]:
        return _answered_and_late(reader, seen, name)

    answered, late = _every_event_answered_or_late(spark, writer, reader, out_name, expected, totals)

    # Now U and F are past every event and nothing waits: 20 more events as old as the oldest are late.
    old = work.events.sort_values("ts").head(20).copy()
    old["event_id"] = old["event_id"] + 10**9
    write_batches(workdir / "events", [old], first_index=len(work.event_batches))
    wait_until(lambda: sum(totals()) >= len(expected) + 20, timeout=120, interval=0.2, what="the old events counted")
    drained(reader)
    assert totals() == (answered, late + 20)
    assert spark.table(out_name).count() == answered


def test_a_watermarked_stream_reports_f_and_lets_compaction_go_with_no_option(spark, workdir, state_name):
    """With the events' own watermark and no lateness option, the join reports F from the watermark:
    F advances, events behind it are late (answered or late, never both, never neither), and the
    State's default compaction (lazy plus the periodic sweep) drops versions below min(F, U)."""
    work, writer, reader, out_name = _start(
        spark, workdir, state_name, seed=21, rule="sum", how="left", watermark="5 seconds"
    )
    expected = _expected(work, "sum").set_index("event_id")
    seen: list = []
    name = f"sharedstate_fetch:{state_name}:{WINDOW_S * 1_000_000}:-1:0"

    def totals() -> tuple[int, int]:
        return _answered_and_late(reader, seen, name)

    answered, late = _every_event_answered_or_late(spark, writer, reader, out_name, expected, totals)
    state = ss.State.get(spark, state_name)
    f = state.progress()["fetch"]
    assert f is not None, "the watermark alone advanced the join's F"
    assert f <= pd.Timestamp(max(work.events["ts"])).to_pydatetime()
    wait_until(
        lambda: state.progress()["pairs_compacted"] > 0, timeout=60, what="the default compaction to drop old pairs"
    )
    # events as old as the oldest are now behind F: late, not answered
    old = work.events.sort_values("ts").head(10).copy()
    old["event_id"] = old["event_id"] + 10**9
    write_batches(workdir / "events", [old], first_index=len(work.event_batches))
    wait_until(lambda: sum(totals()) >= len(expected) + 10, timeout=120, interval=0.2, what="the old events counted")
    drained(reader)
    assert totals() == (answered, late + 10)
