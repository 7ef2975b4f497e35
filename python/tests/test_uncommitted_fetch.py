"""Read-uncommitted fetch joins with staleness s: an event at t is answered once t - s < U, from the
updates applied by then (bounded staleness), instead of waiting for t < U."""

from __future__ import annotations

import pandas as pd
import pytest

import sharedstate as ss
from sharedstate.testing.adcamp import EVENT_SCHEMA, UPDATE_SCHEMA, write_batches
from sharedstate.testing.streams import wait_until


def _secs(*s):
    return pd.to_datetime(list(s), unit="s", utc=True)


def test_uncommitted_answers_early_from_what_is_applied(spark, workdir, state_name):
    state = ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=2)
    first = pd.DataFrame({"ad_id": ["a", "b", "a"], "ts": _secs(5, 15, 25), "campaign": ["c1", "c2", "c3"]})
    later = pd.DataFrame({"ad_id": ["z"], "ts": _secs(100), "campaign": ["end"]})
    write_batches(workdir / "updates", [first])
    writer_args = dict(state=state_name, key="ad_id", time="ts", checkpointLocation=str(workdir / "ck-u"))

    def run_writer():
        w = spark.readStream.schema(UPDATE_SCHEMA).parquet(str(workdir / "updates")).writeStream.format("sharedstate")
        for k, v in writer_args.items():
            w = w.option(k, v)
        q = w.start()
        q.processAllAvailable()
        q.stop()

    run_writer()  # U = 25 s: a@5 and b@15 are applied, a@25 waits (it is not below U)
    assert state.progress()["update"] == _secs(25)[0]

    events = pd.DataFrame(
        {
            "event_id": [1, 2, 3],
            "user_id": ["u"] * 3,
            "ad_id": ["a", "b", "a"],
            "ts": _secs(30, 38, 45),
            "clicked": [False] * 3,
        }
    )
    write_batches(workdir / "events", [events])
    stream = spark.readStream.schema(EVENT_SCHEMA).parquet(str(workdir / "events"))
    out = f"out_{state_name}"
    reader = (
        ss.fetch_join(stream, state_name, key="ad_id", time="ts", mode="uncommitted", staleness="15 seconds")
        .writeStream.format("memory")
        .queryName(out)
        .option("checkpointLocation", str(workdir / "ck-e"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    # 30 - 15 < 25 and 38 - 15 < 25: answered now, from the applied pairs; 45 - 15 >= 25 waits.
    wait_until(lambda: spark.table(out).count() == 2, 120, what="two early answers")
    early = spark.table(out).toPandas().set_index("event_id")["campaign"].to_dict()
    assert early == {1: "c1", 2: "c2"}, "a@25 was not applied yet: the stale answer is c1, not c3"

    write_batches(workdir / "updates", [first, later])  # the second file arrives: U = 100 s
    run_writer()
    wait_until(lambda: spark.table(out).count() == 3, 120, what="the waiting event")
    final = spark.table(out).toPandas().set_index("event_id")["campaign"].to_dict()
    assert final == {1: "c1", 2: "c2", 3: "c3"}
    reader.stop()

    # The same events read-committed give the as-of answers: event 1 sees a@25.
    assert (
        ss.State.get(spark, state_name).as_of("1970-01-01 00:00:30").toPandas().set_index("ad_id")["campaign"]["a"]
        == "c3"
    )


def test_staleness_is_checked(spark, workdir, state_name):
    ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING")
    (workdir / "ev").mkdir()
    events = spark.readStream.schema(EVENT_SCHEMA).parquet(str(workdir / "ev"))
    with pytest.raises(ss.SharedStateError, match="mode 'uncommitted' needs a staleness"):
        ss.fetch_join(events, state_name, key="ad_id", time="ts", mode="uncommitted")
    with pytest.raises(ss.SharedStateError, match="staleness applies to mode 'uncommitted' only"):
        ss.fetch_join(events, state_name, key="ad_id", time="ts", staleness="5 seconds")
    with pytest.raises(ss.SharedStateError, match="Option 'staleness': 'later' is not an interval"):
        ss.fetch_join(events, state_name, key="ad_id", time="ts", mode="uncommitted", staleness="later")
