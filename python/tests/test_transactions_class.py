"""The class form of ss.transact from Python: Toll Processing decided by a JVM class shipped in the
plugin's jar (io.sharedstate.spark.txn.TollProcessingExample) gives the sequential oracle's outcomes
and final States; bad class-form arguments fail naming what is wrong."""

from __future__ import annotations

import pytest

import sharedstate as ss
from sharedstate.errors import SharedStateError
from sharedstate.testing.adcamp import write_batches
from sharedstate.testing.transactions import arrival_batches, toll_processing
from test_transactions_apps import await_and_check
from test_transactions_ledger import _states

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
    await_and_check(spark, txn, work, names, workdir)


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
