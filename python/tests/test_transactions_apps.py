"""The other TStream applications (Grep and Sum, Online Bidding, Toll Processing) as declarative
transactions on Spark, on out-of-order input: every outcome (committed or not, the values read) and
every final value equal the sequential oracle's."""

from __future__ import annotations

import pytest

import sharedstate as ss
from sharedstate.testing.adcamp import write_batches
from sharedstate.testing.streams import drained, wait_until
from sharedstate.testing.transactions import arrival_batches, grep_and_sum, online_bidding, toll_processing
from test_transactions_ledger import _count, _start_transactions, _states

APPS = {
    "GS": lambda: grep_and_sum(5, records=60, events=300, horizon_s=120),
    "OB": lambda: online_bidding(5, records=60, events=300, length=5, horizon_s=120),
    "TP": lambda: toll_processing(5, segments=10, vehicles=40, events=300, horizon_s=120),
}


def _plain(value) -> object:
    """A Row, tuple, list or scalar as plain lists (structs and arrays alike)."""
    if hasattr(value, "asDict"):
        return [_plain(v) for v in value.asDict().values()]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


@pytest.mark.parametrize("app", sorted(APPS))
def test_application_equals_the_sequential_oracle(spark, workdir, state_name, app):
    work = APPS[app]()
    names = _states(spark, work, state_name, workdir)
    write_batches(workdir / "in", arrival_batches(work.events, 6))
    txn = _start_transactions(spark, work, names, workdir)
    expected = work.oracle()

    def done() -> bool:
        if txn.exception() is not None:
            raise AssertionError(f"query failed: {txn.exception()}")
        return _count(spark, workdir / "out") >= len(expected.committed)

    wait_until(done, timeout=300, what=f"{len(expected.committed)} outcomes")
    drained(txn)
    got = spark.read.parquet(str(workdir / "out")).collect()
    assert sorted(r["event_id"] for r in got) == sorted(expected.committed), "one outcome per event"
    for r in got:
        e = r["event_id"]
        assert r["committed"] == expected.committed[e], f"event {e}"
        reads = {n: (None if r[n] is None else _plain(r[n])) for n in expected.reads[e]}
        want = {n: (None if v is None else _plain(v)) for n, v in expected.reads[e].items()}
        assert reads == want, f"event {e} read other values"
    for name, state in names.items():
        key, value = work.states[name]
        key_column = key.split(" ")[0]
        table = ss.State.get(spark, state).as_of().collect()
        values = [c.strip().split(" ")[0] for c in value.split(",")]
        final = {r[key_column]: _plain(tuple(r[c] for c in values)) for r in table}
        want = {k: _plain(v) for k, v in expected.final[name].items()}
        assert final == want, f"final {name} differs from the sequential oracle"
