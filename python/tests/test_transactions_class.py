"""The class form of ss.transact from Python: Toll Processing decided by a JVM class shipped in the
plugin's jar (io.sharedstate.spark.txn.TollProcessingExample) gives the sequential oracle's outcomes
and final States; bad class-form arguments fail naming what is wrong."""

from __future__ import annotations

import pytest

import sharedstate as ss
from sharedstate.errors import SharedStateError
from sharedstate.testing.adcamp import write_batches
from sharedstate.testing.streams import drained, wait_until
from sharedstate.testing.transactions import arrival_batches, assert_equals_oracle, toll_processing
from test_transactions_ledger import _count, _states

LOGIC = "io.sharedstate.spark.txn.TollProcessingExample"


def test_toll_processing_class_equals_the_sequential_oracle(spark, workdir, state_name):
    work = toll_processing(11, segments=10, vehicles=40, events=300, horizon_s=120)
    names = _states(spark, work, state_name, workdir)
    write_batches(workdir / "in", arrival_batches(work.events, 6))
    events = spark.readStream.schema(work.event_schema).option("maxFilesPerTrigger", 1).parquet(str(workdir / "in"))
    outcomes = ss.transact(
        events,
        time="ts",
        lateness=f"{work.lateness_s} seconds",
        logic=LOGIC,
        reads={"s": (names["speeds"], "segment"), "c": (names["counts"], "segment")},
        writes=[(names["speeds"], "segment"), (names["counts"], "segment")],
    )
    txn = (
        outcomes.writeStream.format("parquet")
        .option("path", str(workdir / "out"))
        .option("checkpointLocation", str(workdir / "ck-txn"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    expected = work.oracle()

    def done() -> bool:
        if txn.exception() is not None:
            raise AssertionError(f"query failed: {txn.exception()}")
        return _count(spark, workdir / "out") >= len(expected.committed)

    wait_until(done, timeout=300, what=f"{len(expected.committed)} outcomes")
    drained(txn)
    outcomes = spark.read.parquet(str(workdir / "out")).collect()
    finals = {name: ss.State.get(spark, state).as_of().collect() for name, state in names.items()}
    assert_equals_oracle(work, expected, outcomes, finals)


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"logic": "com.example.NoSuchLogic"}, "'com.example.NoSuchLogic' is not on the classpath"),
        ({"logic": "java.lang.String"}, "does not implement io.sharedstate.spark.txn.RowTransactionLogic"),
        ({"logic": LOGIC, "condition": "true"}, "give a condition or a logic class, not both"),
        ({"logic": LOGIC, "writes": [("S", "segment", "1")]}, "must be a pair (state, key expression)"),
    ],
)
def test_bad_class_form_fails_at_definition(spark, workdir, state_name, kwargs, message):
    ss.State.create(spark, f"{state_name}_speeds", key="segment INT", value="total BIGINT, reports BIGINT")
    events = spark.readStream.schema("vehicle INT, segment INT, speed BIGINT, ts TIMESTAMP").parquet(str(workdir))
    args = {"reads": {"s": (f"{state_name}_speeds", "segment")}, "writes": [(f"{state_name}_speeds", "segment")]}
    args.update(kwargs)
    with pytest.raises(SharedStateError, match=None) as failure:
        ss.transact(events, time="ts", **args)
    assert message in str(failure.value)
