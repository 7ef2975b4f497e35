"""Transactions at the edges of update progress: a late transaction (its time below U when its
micro-batch commits) gets an outcome (`committed = false`, `reason = 'late'`, no reads), no effect,
and one rejected row per key it would have written in that State's rejected log and count (the
rejected table of a durable State); a State made final by a bulk load (U = +infinity) cannot join a
transaction group: the definition fails naming it and how to reopen it."""

from __future__ import annotations

import pandas as pd
import pytest

import sharedstate as ss
from sharedstate.testing.adcamp import write_batches
from sharedstate.testing.streams import drained, wait_until
from test_transactions_ledger import _count

EVENTS = "event_id BIGINT, acct STRING, amount BIGINT, ts TIMESTAMP"


def _events(rows: list[tuple[int, str, int, int]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=["event_id", "acct", "amount", "ts"])
    frame["acct"] = frame["acct"].astype("string")  # an all-null column stays STRING in the file
    frame["ts"] = pd.to_datetime(frame["ts"], unit="s", utc=True)
    return frame


def _deposits(spark, state: str, source) -> object:
    events = spark.readStream.schema(EVENTS).option("maxFilesPerTrigger", 1).parquet(str(source))
    return ss.transact(
        events,
        time="ts",
        reads={"b": (state, "acct")},
        writes=[(state, "acct", "coalesce(b.balance, 0) + amount")],
    )


@pytest.mark.parametrize("durable", [False, True], ids=["in-memory", "durable"])
def test_a_late_transaction_has_a_late_outcome_no_effect_and_a_rejected_row(spark, workdir, state_name, durable):
    root = {"root": str(workdir / "root")} if durable else {}
    state = ss.State.create(spark, state_name, key="id STRING", value="balance BIGINT", partitions=2, **root)
    # One file per micro-batch, lateness 0: after the first batch U is 200 s, so event 3 (50 s) in the
    # second batch is late; the sentinel (10 000 s) moves U past 300 s and has no outcome itself.
    batches = [
        _events([(1, "a", 10, 100), (2, "b", 5, 200)]),
        _events([(3, "a", 1000, 50), (4, "a", 7, 300)]),
        _events([(5, None, 0, 10_000)]),
    ]
    write_batches(workdir / "in", batches)
    query = (
        _deposits(spark, state_name, workdir / "in")
        .writeStream.format("parquet")
        .option("path", str(workdir / "out"))
        .option("checkpointLocation", str(workdir / "ck"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )

    def done() -> bool:
        if query.exception() is not None:
            raise AssertionError(f"query failed: {query.exception()}")
        return _count(spark, workdir / "out") >= 4

    wait_until(done, timeout=180, what="4 outcomes")
    drained(query)
    query.stop()
    got = {r["event_id"]: r for r in spark.read.parquet(str(workdir / "out")).collect()}
    assert sorted(got) == [1, 2, 3, 4], "one outcome per event but the sentinel, the late one included, once"
    assert [(got[e]["committed"], got[e]["reason"]) for e in (1, 2, 4)] == [(True, None)] * 3
    assert (got[3]["committed"], got[3]["reason"], got[3]["b"]) == (False, "late", None)
    assert got[4]["b"]["balance"] == 10, "the late deposit had no effect on what the next one read"
    final = {r["id"]: r["balance"] for r in state.as_of().collect()}
    assert final == {"a": 17, "b": 5}
    late = state.late_updates().collect()
    # one row per key it would have written, at its time (the session's clock is UTC), no value
    assert [(r["key"]["id"], r["reason"], pd.Timestamp(r["time"]).timestamp(), r["value"]) for r in late] == [
        ("a", "late_transaction", 50.0, None)
    ]
    assert state.progress()["updates_rejected"] == 1


def test_a_state_final_after_a_bulk_load_cannot_join_a_group(spark, workdir, state_name):
    ss.State.create(spark, state_name, key="id STRING", value="balance BIGINT", partitions=2)
    initial = pd.DataFrame({"id": ["a"], "balance": [100], "ts": [pd.Timestamp(1, unit="s", tz="UTC")]})
    (
        spark.createDataFrame(initial)
        .write.format("sharedstate")
        .option("state", state_name)
        .option("key", "id")
        .option("time", "ts")
        .mode("append")
        .save()
    )
    assert ss.State.get(spark, state_name).progress()["update_is"] == "+infinity"
    write_batches(workdir / "in", [_events([(1, "a", 10, 100)])])
    with pytest.raises(ss.SharedStateError) as e:
        _deposits(spark, state_name, workdir / "in")
    message = str(e.value)
    assert state_name in message and "final" in message and "reopens it at its last finite U" in message, message
