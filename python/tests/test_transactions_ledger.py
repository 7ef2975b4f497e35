"""Streaming Ledger (TStream's SL) as declarative transactions on Spark: deposits and transfers that
abort on insufficient balance, on randomised out-of-order input, beside a concurrent plain writer
that sets account balances. The outcomes (committed or not, the values read) and the final States
must equal a sequential oracle in Python that applies everything one by one in time order; a restart
from the checkpoint must duplicate nothing."""

from __future__ import annotations

import pandas as pd
import pytest

import sharedstate as ss
from sharedstate.testing.adcamp import to_spark_parquet, write_batches
from sharedstate.testing.streams import drained, wait_until
from sharedstate.testing.transactions import INITIAL_TIME, arrival_batches, assert_equals_oracle, streaming_ledger


def _states(spark, work, prefix: str, workdir) -> dict[str, str]:
    """Creates the workload's States under unique names, loaded with its initial values at time 0 by a
    streaming writer that then stops (paused, it no longer holds U, and U stays finite: a bulk load
    would make the States final, which a transaction group refuses to reopen)."""
    names = {}
    for name, (key, value) in work.states.items():
        names[name] = f"{prefix}_{name}"
        ss.State.create(spark, names[name], key=key, value=value, partitions=4)
        if not work.initial.get(name):
            continue
        key_column = key.split(" ")[0]
        value_columns = [c.strip().split(" ")[0] for c in value.split(",")]
        rows = [(k, *v, INITIAL_TIME.to_pydatetime()) for k, v in work.initial[name].items()]
        # written by Spark, so the file has the State's column types (pandas would widen INT to BIGINT)
        spark.createDataFrame(rows, f"{key}, {value}, ts TIMESTAMP").write.parquet(str(workdir / f"initial-{name}"))
        loader = (
            spark.readStream.schema(f"{key}, {value}, ts TIMESTAMP")
            .parquet(str(workdir / f"initial-{name}"))
            .writeStream.format("sharedstate")
            .option("state", names[name])
            .option("key", key_column)
            .option("time", "ts")
            .option("value", ",".join(value_columns))
            .option("checkpointLocation", str(workdir / f"ck-initial-{name}"))
            .trigger(availableNow=True)
            .start()
        )
        loader.awaitTermination(120)
    return names


def _start_plain_writer(spark, work, names, workdir):
    write_batches(workdir / "plain", arrival_batches(work.plain, 8))
    plain = spark.readStream.schema("key STRING, ts TIMESTAMP, balance BIGINT").option("maxFilesPerTrigger", 1)
    return (
        plain.parquet(str(workdir / "plain"))
        .writeStream.format("sharedstate")
        .option("state", names[work.plain_state])
        .option("key", "key")
        .option("time", "ts")
        .option("value", "balance")
        .option("lateness", f"{work.lateness_s} seconds")
        .option("checkpointLocation", str(workdir / "ck-plain"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )


def _start_transactions(spark, work, names, workdir):
    events = spark.readStream.schema(work.event_schema).option("maxFilesPerTrigger", 1).parquet(str(workdir / "in"))
    outcomes = ss.transact(events, time="ts", lateness=f"{work.lateness_s} seconds", **work.transaction_over(names))
    return (
        outcomes.writeStream.format("parquet")
        .option("path", str(workdir / "out"))
        .option("checkpointLocation", str(workdir / "ck-txn"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )


def _count(spark, path) -> int:
    """Rows the parquet sink committed so far (0 before its first file)."""
    from pyspark.errors import AnalysisException

    try:
        return spark.read.parquet(str(path)).count()
    except AnalysisException:
        return 0


def _check(spark, work, names, workdir) -> None:
    # The plain writer's updates that U had passed when they arrived are late (the transactional
    # query holds U at its own watermark): the oracle applies the accepted ones.
    if work.plain is not None:
        late = ss.State.get(spark, names[work.plain_state]).late_updates().toPandas()
        late_keys = {(r["id"], pd.Timestamp(t).value // 1000) for r, t in zip(late["key"], late["time"])}
        micros = pd.to_datetime(work.plain["ts"], utc=True).astype("datetime64[us, UTC]").astype("int64")
        accepted = [(k, t) not in late_keys for k, t in zip(work.plain["key"], micros)]
        work.plain = work.plain[accepted].reset_index(drop=True)
    expected = work.oracle()
    assert 0 < sum(not c for c in expected.committed.values()) < len(expected.committed), "some transfers abort"
    outcomes = spark.read.parquet(str(workdir / "out")).collect()
    finals = {name: ss.State.get(spark, state).as_of().collect() for name, state in names.items()}
    assert_equals_oracle(work, expected, outcomes, finals)


@pytest.mark.parametrize("seed", [3, 24])
def test_ledger_outcomes_and_final_states_equal_the_sequential_oracle(spark, workdir, state_name, seed):
    work = streaming_ledger(seed, records=40, events=600, horizon_s=240, disorder_s=5, plain_updates=60)
    names = _states(spark, work, state_name, workdir)
    write_batches(workdir / "in", arrival_batches(work.events, 12))
    txn = _start_transactions(spark, work, names, workdir)  # first: it joins at U before the plain writer moves U
    plain = _start_plain_writer(spark, work, names, workdir)
    expected = len(work.events) - 1

    def done() -> bool:
        for q in (plain, txn):
            if q.exception() is not None:
                raise AssertionError(f"query failed: {q.exception()}")
        return _count(spark, workdir / "out") >= expected

    wait_until(done, timeout=300, what=f"{expected} outcomes")
    drained(plain)
    drained(txn)
    _check(spark, work, names, workdir)


def test_restart_from_the_checkpoint_duplicates_nothing(spark, workdir, state_name):
    # No plain writer here: while the query is stopped it does not hold U, and a writer moving U on
    # would make its next events late (correctly, but then there is nothing to compare).
    work = streaming_ledger(11, records=30, events=400, horizon_s=200, disorder_s=5)
    names = _states(spark, work, state_name, workdir)
    batches = arrival_batches(work.events, 10)
    write_batches(workdir / "in", batches[:5])
    txn = _start_transactions(spark, work, names, workdir)
    drained(txn)
    txn.stop()
    write_batches(workdir / "in", batches[5:], first_index=5)
    txn = _start_transactions(spark, work, names, workdir)
    expected = len(work.events) - 1

    def done() -> bool:
        if txn.exception() is not None:
            raise AssertionError(f"query failed: {txn.exception()}")
        return _count(spark, workdir / "out") >= expected

    wait_until(done, timeout=300, what=f"{expected} outcomes")
    drained(txn)
    _check(spark, work, names, workdir)


def test_bad_transactions_fail_at_definition_naming_the_problem(spark, workdir, state_name):
    work = streaming_ledger(1, records=5, events=10)
    names = _states(spark, work, state_name, workdir)
    (workdir / "ev").mkdir()
    to_spark_parquet(work.events, workdir / "ev" / "e.parquet")
    events = spark.readStream.schema(work.event_schema).parquet(str(workdir / "ev"))
    accounts = names["accounts"]

    def error(**kwargs) -> str:
        args = {"time": "ts", "writes": [(accounts, "dst_account", "1L")]}
        args.update(kwargs)
        with pytest.raises(ss.SharedStateError) as e:
            ss.transact(events, **args)
        return str(e.value)

    unknown = error(reads={"x": ("nope", "src_account")})
    assert "nope" in unknown and accounts in unknown, unknown  # names the existing States
    assert "has type BIGINT, but State" in error(reads={"x": (accounts, "account_amount")})
    assert "it must be BOOLEAN" in error(condition="account_amount + 1")
    assert "cannot be stored in State" in error(writes=[(accounts, "dst_account", "concat(kind, 'x')")])
    assert "cannot be resolved" in error(condition="nothere > 1")
    assert "must be a pair" in error(reads={"x": accounts})
    assert "non-empty list" in error(writes=[])
    assert "TIMESTAMP" in error(time="kind")
    batch = spark.createDataFrame(pd.DataFrame({"ts": [pd.Timestamp(1, unit="s", tz="UTC")]}))
    with pytest.raises(ss.SharedStateError, match="streaming DataFrame"):
        ss.transact(batch, time="ts", writes=[(accounts, "'a'", "1L")])
