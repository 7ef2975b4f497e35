"""A State dropped and created again (here with another value type) under running queries makes
them fail with an error naming the State, never answer from the new one as if it were the old."""

from __future__ import annotations

import pandas as pd
import pytest

import sharedstate as ss
from sharedstate.testing.adcamp import EVENT_SCHEMA, UPDATE_SCHEMA, write_batches
from sharedstate.testing.streams import drained, wait_until


def _secs(*s):
    return pd.to_datetime(list(s), unit="s", utc=True)


def test_queries_fail_by_name_when_their_state_is_created_again(spark, workdir, state_name):
    ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=2)
    write_batches(
        workdir / "updates", [pd.DataFrame({"ad_id": ["a", "b"], "ts": _secs(10, 30), "campaign": ["c1", "x"]})]
    )
    events = pd.DataFrame({"event_id": [1], "user_id": ["u"], "ad_id": ["a"], "ts": _secs(15), "clicked": [False]})
    write_batches(workdir / "events", [events])
    writer = (
        spark.readStream.schema(UPDATE_SCHEMA)
        .parquet(str(workdir / "updates"))
        .writeStream.format("sharedstate")
        .option("state", state_name)
        .option("key", "ad_id")
        .option("time", "ts")
        .option("checkpointLocation", str(workdir / "ck-u"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    out = f"out_{state_name}"
    reader = (
        ss.fetch_join(spark.readStream.schema(EVENT_SCHEMA).parquet(str(workdir / "events")), state_name, "ad_id", "ts")
        .writeStream.format("memory")
        .queryName(out)
        .option("checkpointLocation", str(workdir / "ck-e"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    drained(writer)
    wait_until(lambda: spark.table(out).count() == 1, 60, "the first answer")
    assert spark.table(out).collect()[0].campaign == "c1"

    ss.State.get(spark, state_name).drop()
    ss.State.create(spark, state_name, key="ad_id STRING", value="campaign BIGINT", partitions=2)
    more = pd.DataFrame({"event_id": [2], "user_id": ["u"], "ad_id": ["a"], "ts": _secs(25), "clicked": [False]})
    write_batches(workdir / "events", [more], first_index=1)
    write_batches(
        workdir / "updates", [pd.DataFrame({"ad_id": ["a"], "ts": _secs(20), "campaign": ["c2"]})], first_index=1
    )
    for query, what in ((reader, "fetch join"), (writer, "writer")):
        wait_until(lambda q=query: q.exception() is not None or not q.isActive, 120, f"the {what} to fail")
        assert f"State '{state_name}' was dropped or created again since this {what} was planned" in str(
            query.exception()
        )
    assert spark.table(out).count() == 1, "nothing was answered from the new State"
    with pytest.raises(Exception, match="was dropped or created again"):
        reader.awaitTermination()
