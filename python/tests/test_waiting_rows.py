"""Read-committed rows wait for U without any new input: they are released by micro-batches that
read nothing, once a writer's commit moves U past them."""

from __future__ import annotations

import pandas as pd

import sharedstate as ss
from sharedstate.testing.adcamp import EVENT_SCHEMA, UPDATE_SCHEMA, write_batches
from sharedstate.testing.streams import drained, wait_until


def test_waiting_rows_are_emitted_by_batches_without_new_input(spark, workdir, state_name):
    state = ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=2)
    events = pd.DataFrame(
        {
            "event_id": [1, 2, 3],
            "user_id": ["u1", "u2", "u3"],
            "ad_id": ["a", "b", "a"],
            "ts": pd.to_datetime([10, 20, 30], unit="s", utc=True),
            "clicked": [False, True, False],
        }
    )
    write_batches(workdir / "events", [events])
    stream = spark.readStream.schema(EVENT_SCHEMA).parquet(str(workdir / "events"))
    out = f"out_{state_name}"
    reader = (
        ss.fetch_join(stream, state_name, key="ad_id", time="ts")
        .writeStream.format("memory")
        .queryName(out)
        .option("checkpointLocation", str(workdir / "ck-events"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    wait_until(lambda: any(p["numInputRows"] == 3 for p in reader.recentProgress), 120, what="events read")
    assert spark.table(out).count() == 0, "nothing is final yet (U = -infinity): every event waits"

    # Only now do the updates arrive; the event source has nothing more to give.
    updates = pd.DataFrame(
        {
            "ad_id": ["a", "b", "a", "z"],
            "campaign": ["c1", "c2", "c3", "end"],
            "ts": pd.to_datetime([5, 15, 25, 100], unit="s", utc=True),
        }
    )
    write_batches(workdir / "updates", [updates])
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
    writer.processAllAvailable()
    assert state.progress()["update"] == pd.Timestamp(100, unit="s", tz="UTC")
    wait_until(lambda: spark.table(out).count() == 3, 120, what="waiting events released")

    got = spark.table(out).toPandas().sort_values("event_id")
    assert got["campaign"].tolist() == ["c1", "c2", "c3"]
    assert got[state.time_column].dt.second.tolist() == [5, 15, 25]
    # The rows came out of micro-batches that read no events (only U's progress stream moved).
    released = [p for p in reader.recentProgress if p["sink"]["numOutputRows"] > 0]
    assert released
    for p in released:
        events_in = [s["numInputRows"] for s in p["sources"] if "FileStream" in s["description"]]
        assert events_in == [0], p["sources"]
        # released by the U step's own tick rows in the same batch, not by a later no-data batch
        ticks_in = [s["numInputRows"] for s in p["sources"] if "FileStream" not in s["description"]]
        assert ticks_in and ticks_in[0] > 0, p["sources"]
    # and with nothing more to read and U still, the query is idle: processAllAvailable returns
    drained(reader)
    idle_batch = reader.lastProgress["batchId"]
    import time

    time.sleep(2)
    assert reader.lastProgress["batchId"] == idle_batch, "no micro-batch runs while nothing changes"


def test_events_without_a_time_get_no_value_and_do_not_wait(spark, workdir, state_name):
    ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=2)
    events = pd.DataFrame(
        {
            "event_id": [1, 2],
            "user_id": ["u1", "u2"],
            "ad_id": ["a", "a"],
            "ts": [pd.NaT, pd.Timestamp(10, unit="s", tz="UTC")],
            "clicked": [False, True],
        }
    )
    write_batches(workdir / "events", [events])
    stream = spark.readStream.schema(EVENT_SCHEMA).parquet(str(workdir / "events"))
    for how in ("left", "inner"):
        out = f"out_{how}_{state_name}"
        q = (
            ss.fetch_join(stream, state_name, key="ad_id", time="ts", how=how)
            .writeStream.format("memory")
            .queryName(out)
            .option("checkpointLocation", str(workdir / f"ck-{how}"))
            .start()
        )
        drained(q)
        got = spark.table(out).toPandas()
        q.stop()
        # U is -infinity: the timed event waits; the untimed one is answered at once (left: nulls)
        if how == "left":
            assert got["event_id"].tolist() == [1] and got["campaign"].isna().all()
        else:
            assert got.empty


def test_a_foreach_batch_that_reads_only_part_of_a_batch_fails_the_next_one_by_name(spark, workdir, state_name):
    """Waiting rows live in one file per task: a batch whose output was not all consumed (here a
    foreachBatch that takes one row) leaves files missing, and the next batch refuses to guess."""
    state = ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=2)
    updates = pd.DataFrame({"ad_id": ["a"], "campaign": ["c1"], "ts": pd.to_datetime([100], unit="s", utc=True)})
    spark.createDataFrame(updates).write.format("sharedstate").option("state", state_name).option(
        "key", "ad_id"
    ).option("time", "ts").mode("append").save()
    assert state.progress()["update_is"] == "+infinity"

    def event(i: int) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "event_id": [i],
                "user_id": ["u"],
                "ad_id": ["a"],
                "ts": pd.to_datetime([10 + i], unit="s", utc=True),
                "clicked": [False],
            }
        )

    write_batches(workdir / "events", [event(1), event(2)])  # two files: two input partitions
    stream = spark.readStream.schema(EVENT_SCHEMA).parquet(str(workdir / "events"))
    q = (
        ss.fetch_join(stream, state_name, key="ad_id", time="ts")
        .writeStream.foreachBatch(lambda batch, _id: batch.limit(1).collect())
        .option("checkpointLocation", str(workdir / "ck"))
        .start()
    )
    # batch 0 runs the first task only (one row is enough for limit(1)): the others never write their files
    wait_until(lambda: q.lastProgress is not None, 120, what="first batch")
    write_batches(workdir / "events", [event(3)], first_index=2)
    wait_until(lambda: q.exception() is not None, 120, what="the next batch failing")
    message = str(q.exception())
    assert "waiting events of micro-batch 0" in message and "incomplete" in message
    assert "must write the whole DataFrame" in message
