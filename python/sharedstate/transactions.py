"""State transactions: each event reads and writes keys of one or more States as one atomic step,
applied in event-time order once update progress passes it (TStream's model; docs/transactions.md)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from pyspark.sql import DataFrame

from sharedstate._jvm import api
from sharedstate.errors import SharedStateError, translated


def _text(argument: str, value, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise SharedStateError(f"transact: {argument} must be {what}, got {value!r}.")
    return value


def _reads(reads: Mapping[str, Sequence[str]] | None) -> list[dict]:
    if reads is None:
        return []
    if not isinstance(reads, Mapping):
        raise SharedStateError(
            "transact: reads must be a dict {name: (state, key expression)}, e.g. "
            f'{{"src": ("accounts", "from_id")}}; got {type(reads).__name__}.'
        )
    out = []
    for name, read in reads.items():
        _text("a read's name", name, "an identifier (the condition and new values use it as a column)")
        if isinstance(read, str) or not isinstance(read, Sequence) or len(read) != 2:
            raise SharedStateError(
                f"transact: read {name!r} must be a pair (state, key expression), e.g. ('accounts', 'from_id'); "
                f"got {read!r}."
            )
        state, key = read
        out.append(
            {
                "name": name,
                "state": _text(f"the state of read {name!r}", getattr(state, "name", state), "a State name"),
                "key": _text(f"the key of read {name!r}", key, "a Spark SQL expression over the event's columns"),
            }
        )
    return out


def _class_writes(writes: Sequence[Sequence[str]], logic: str) -> list[dict]:
    if isinstance(writes, (str, Mapping)) or not isinstance(writes, Sequence) or not writes:
        raise SharedStateError(
            f"transact: with logic={logic!r} writes must be a non-empty list of (state, key expression): the keys "
            f'the class may write, e.g. [("accounts", "to_id")]; got {writes!r}.'
        )
    out = []
    for i, write in enumerate(writes, start=1):
        if isinstance(write, str) or not isinstance(write, Sequence) or len(write) != 2:
            raise SharedStateError(
                f"transact: with logic={logic!r} write {i} must be a pair (state, key expression) (the class gives "
                f"the new values); got {write!r}."
            )
        state, key = write
        out.append(
            {
                "state": _text(f"the state of write {i}", getattr(state, "name", state), "a State name"),
                "key": _text(f"the key of write {i}", key, "a Spark SQL expression over the event's columns"),
            }
        )
    return out


def _writes(writes: Sequence[Sequence[str]]) -> list[dict]:
    if isinstance(writes, (str, Mapping)) or not isinstance(writes, Sequence) or not writes:
        raise SharedStateError(
            "transact: writes must be a non-empty list of (state, key expression, new value expression), e.g. "
            '[("accounts", "to_id", "coalesce(dst.balance, 0) + amount")]; '
            f"got {writes!r}."
        )
    out = []
    for i, write in enumerate(writes, start=1):
        if isinstance(write, str) or not isinstance(write, Sequence) or len(write) != 3:
            raise SharedStateError(
                f"transact: write {i} must be a triple (state, key expression, new value expression); got {write!r}."
            )
        state, key, value = write
        out.append(
            {
                "state": _text(f"the state of write {i}", getattr(state, "name", state), "a State name"),
                "key": _text(f"the key of write {i}", key, "a Spark SQL expression over the event's columns"),
                "value": _text(
                    f"the new value of write {i}",
                    value,
                    "a Spark SQL expression over the event's columns and the values read",
                ),
            }
        )
    return out


def transact(
    events: DataFrame,
    time: str,
    writes: Sequence[Sequence[str]],
    reads: Mapping[str, Sequence[str]] | None = None,
    condition: str | None = None,
    outcomes: bool = True,
    lateness: str | None = None,
    logic: str | None = None,
) -> DataFrame:
    """Runs one transaction per event of a streaming DataFrame against one or more States.

    Each event at time ``time`` (a TIMESTAMP column) reads the keys named in ``reads``
    (``{name: (state, key expression)}``; the key is a Spark SQL expression over the event's
    columns, a struct of the key columns for a multi-column key), checks ``condition`` (a BOOLEAN
    Spark SQL expression over the event's columns and the values read, each a struct of its State's
    value columns, null when the key holds nothing) and, when it holds, writes each of ``writes``
    (``(state, key expression, new value expression)``; the new value is the value column for a
    one-column value, else ``named_struct(...)`` of the value columns in order). The transaction sees
    exactly the effects of every transaction and update with a smaller time (ties: the order in
    docs/transactions.md) and takes effect as a whole or not at all. A null key skips that read or
    write; a null new value writes nothing; a false or null condition aborts the transaction.

    The query writes the States: it holds their update progress U at its events' watermark (the
    latest event time seen minus ``lateness``, default 0), and a transaction below U when its
    micro-batch commits is late (no effect; its outcome has ``reason`` ``late``, the States' rejected
    logs a ``late_transaction`` row per key it would have written). With ``outcomes=True`` the
    result is a streaming DataFrame of outcomes, each emitted once U passes its time
    (read-committed: final, the same on every re-run): the event's columns, ``committed``
    (BOOLEAN), ``reason`` (why it aborted: ``condition``, ``late``, ``null_time``; null when
    committed) and one column per read with the value it read. With ``outcomes=False`` the result
    has no rows; run it with any sink (``format("noop")``) for the effects alone. Micro-batch
    queries only; the States must live in this application (local mode).

        transfers = ss.transact(
            events, time="ts",
            reads={"src": ("accounts", "from_id"), "dst": ("accounts", "to_id")},
            condition="src.balance >= amount",
            writes=[("accounts", "from_id", "src.balance - amount"),
                    ("accounts", "to_id", "coalesce(dst.balance, 0) + amount")])

    The class form: ``logic`` names a JVM class implementing
    ``io.sharedstate.spark.txn.RowTransactionLogic`` (on the classpath: ``spark.jars``) that decides
    each transaction over Rows (the event, the values read) instead of ``condition`` and new value
    expressions; ``writes`` are then pairs ``(state, key expression)``, the keys it may write (a write
    to any other key aborts the transaction with reason ``undeclared_write``)::

        reports = ss.transact(
            events, time="ts", logic="io.sharedstate.spark.txn.TollProcessingExample",
            reads={"s": ("speeds", "segment"), "c": ("counts", "segment")},
            writes=[("speeds", "segment"), ("counts", "segment")])
    """
    if not isinstance(events, DataFrame):
        raise SharedStateError(f"transact: events must be a DataFrame, got {type(events).__name__}.")
    _text("time", time, "the name of the events' TIMESTAMP column")
    read_list = _reads(reads)
    if logic is not None:
        _text("logic", logic, "the name of a class implementing io.sharedstate.spark.txn.RowTransactionLogic")
        if condition is not None:
            raise SharedStateError(
                f"transact: give a condition or a logic class, not both (condition={condition!r}, logic={logic!r})."
            )
        write_list = _class_writes(writes, logic)
    else:
        write_list = _writes(writes)
    if condition is not None:
        _text("condition", condition, "a BOOLEAN Spark SQL expression (or None: always commit)")
    if not isinstance(outcomes, bool):
        raise SharedStateError(f"transact: outcomes must be True or False, got {outcomes!r}.")
    if lateness is not None:
        _text("lateness", lateness, "an interval such as '10 seconds' (or None)")
    spark = events.sparkSession
    with translated():
        if logic is not None:
            jdf = api(spark).transactClass(
                events._jdf, time, logic, json.dumps(read_list), json.dumps(write_list), outcomes, lateness
            )
            return DataFrame(jdf, spark)
        jdf = api(spark).transact(
            events._jdf, time, json.dumps(read_list), condition, json.dumps(write_list), outcomes, lateness
        )
    return DataFrame(jdf, spark)
