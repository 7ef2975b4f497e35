"""The other TStream applications (Grep and Sum, Online Bidding, Toll Processing) as declarative
transactions on Spark, on out-of-order input: every outcome (committed or not, the values read) and
every final value equal the sequential oracle's."""

from __future__ import annotations

import pytest

import sharedstate as ss
from sharedstate.testing.adcamp import write_batches
from sharedstate.testing.streams import drained, wait_until
from sharedstate.testing.transactions import (
    arrival_batches,
    assert_equals_oracle,
    grep_and_sum,
    online_bidding,
    toll_processing,
)
from test_transactions_ledger import _count, _start_transactions, _states

APPS = {
    "GS": lambda: grep_and_sum(5, records=60, events=300, horizon_s=120),
    "OB": lambda: online_bidding(5, records=60, events=300, length=5, horizon_s=120),
    "TP": lambda: toll_processing(5, segments=10, vehicles=40, events=300, horizon_s=120),
}


@pytest.mark.parametrize("app", sorted(APPS))
def test_application_equals_the_sequential_oracle(spark, workdir, state_name, app):
    work = APPS[app]()
    names = _states(spark, work, state_name, workdir)
    write_batches(workdir / "in", arrival_batches(work.events, 6))
    txn = _start_transactions(spark, work, names, workdir)
    await_and_check(spark, txn, work, names, workdir)


def await_and_check(spark, txn, work, names: dict, workdir) -> None:
    """Waits for every outcome the sequential oracle commits (the query must not fail meanwhile), then
    compares the outcomes and the final States with the oracle's."""
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
