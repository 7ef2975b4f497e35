"""The three ways to run one TStream application on Spark, side by side: this plugin's
``ss.transact`` (declarative), and what a Spark user writes today: a foreachBatch that applies each
batch's ready events one by one in time order in the driver, with the State in a Delta table
(read the touched keys, then MERGE the new values) or in Redis (MGET, then MSET).

Every method sees the same events in the same files and the same rule for when an event is final:
its time is below the largest time seen minus the lateness (the sentinel, far past every other
time, makes every real event final). The foreachBatch peers keep the events not final yet in the
driver (not fault-tolerant: a restart loses them; the plugin's are in its engine). Each method
records when each event's outcome became visible (wall clock): for the plugin when the outcome's
micro-batch reached the sink, for the peers when the batch's MERGE / MSET returned.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

import pandas as pd
from pyspark.sql import SparkSession

import sharedstate as ss
from sharedstate.testing.transactions import INITIAL_TIME, SECOND, TxnWorkload

TRIGGER = "200 milliseconds"


def _columns(ddl: str) -> list[str]:
    return [c.strip().split(" ")[0] for c in ddl.split(",")]


def _value(row, columns: list[str]) -> tuple:
    return tuple(list(row[c]) if isinstance(row[c], list) else row[c] for c in columns)


class Method:
    """One method on one workload: ``start(events)`` with a streaming DataFrame of the events,
    ``stop()``, then ``final()`` (State -> {key: value tuple}) and ``done`` (event_id -> wall time its
    outcome became visible)."""

    name = ""

    def __init__(self, spark: SparkSession, work: TxnWorkload, workdir: Path, uid: str, redis_port: int | None):
        self.spark, self.work, self.workdir, self.uid = spark, work, workdir, uid
        self.redis_port = redis_port
        self.done: dict[int, float] = {}
        self.error: str | None = None
        self.query = None
        self.sentinel = int(work.events["event_id"].max())

    def start(self, events) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        if self.query is not None:
            self.query.stop()

    def failure(self) -> str | None:
        if self.error:
            return self.error
        if self.query is not None and self.query.exception() is not None:
            return str(self.query.exception())[:500]
        return None

    def final(self) -> dict[str, dict]:
        raise NotImplementedError


class Plugin(Method):
    """``ss.transact`` (the declarative form) with outcomes, written by a foreachBatch that notes
    their event ids (the plugin's outcome stream is final: each outcome once)."""

    name = "sharedstate"

    def start(self, events) -> None:
        self.names = {s: f"bench_{self.uid}_{s}" for s in self.work.states}
        for state, (key, value) in self.work.states.items():
            ss.State.create(self.spark, self.names[state], key=key, value=value, partitions=4)
            self._load(state, key, value)
        outcomes = ss.transact(
            events, time="ts", lateness=f"{self.work.lateness_s} seconds", **self.work.transaction_over(self.names)
        )
        self.query = (
            outcomes.select("event_id")
            .writeStream.foreachBatch(self._note)
            .option("checkpointLocation", str(self.workdir / "ck-txn"))
            .trigger(processingTime=TRIGGER)
            .start()
        )

    def _note(self, batch, _batch_id) -> None:
        ids = [r[0] for r in batch.collect()]
        now = time.time()
        for e in ids:
            self.done[int(e)] = now

    def _load(self, state: str, key: str, value: str) -> None:
        """Initial values by a streaming writer that stops (a bulk load would make the State final,
        which a transaction group refuses to reopen)."""
        initial = self.work.initial.get(state)
        if not initial:
            return
        path = self.workdir / f"initial-{state}"
        rows = [(k, *v, INITIAL_TIME.to_pydatetime()) for k, v in initial.items()]
        self.spark.createDataFrame(rows, f"{key}, {value}, ts TIMESTAMP").write.parquet(str(path))
        loader = (
            self.spark.readStream.schema(f"{key}, {value}, ts TIMESTAMP")
            .parquet(str(path))
            .writeStream.format("sharedstate")
            .option("state", self.names[state])
            .option("key", _columns(key)[0])
            .option("time", "ts")
            .option("value", ",".join(_columns(value)))
            .option("checkpointLocation", str(self.workdir / f"ck-initial-{state}"))
            .trigger(availableNow=True)
            .start()
        )
        loader.awaitTermination(300)
        if loader.exception() is not None:
            raise RuntimeError(f"loading the initial values of {state} failed: {str(loader.exception())[:2000]}")

    def final(self) -> dict[str, dict]:
        out = {}
        for state, (key, value) in self.work.states.items():
            k, cols = _columns(key)[0], _columns(value)
            out[state] = {r[k]: _value(r, cols) for r in ss.State.get(self.spark, self.names[state]).as_of().collect()}
        return out


class ForeachBatchPeer(Method):
    """A foreachBatch that keeps the events not final yet, and applies the final ones one by one in
    time order with the application's own step function (the same Python the oracle runs): read the
    touched keys from the store, decide, write the new values back (one write per key per batch)."""

    def start(self, events) -> None:
        self.pending: list[dict] = []
        self.max_ts = None
        self.lateness = self.work.lateness_s * SECOND
        self.setup()
        self.query = (
            events.writeStream.foreachBatch(self._batch)
            .option("checkpointLocation", str(self.workdir / "ck-peer"))
            .trigger(processingTime=TRIGGER)
            .start()
        )

    def _batch(self, batch, _batch_id) -> None:
        try:
            self._apply(batch)
        except Exception as e:  # noqa: BLE001 - surfaced as the point's failure
            self.error = f"{type(e).__name__}: {e}"[:500]
            raise

    def _apply(self, batch) -> None:
        # Plain dicts, not pandas: a nullable INT column would turn into floats.
        for r in batch.collect():
            e = r.asDict()
            e["_t"] = int(pd.Timestamp(e["ts"]).timestamp() * SECOND)
            self.max_ts = e["_t"] if self.max_ts is None else max(self.max_ts, e["_t"])
            self.pending.append(e)
        if self.max_ts is None:
            return
        bound = self.max_ts - self.lateness
        events = sorted((e for e in self.pending if e["_t"] < bound), key=lambda e: e["_t"])
        if not events:
            return
        self.pending = [e for e in self.pending if e["_t"] >= bound]
        wanted: dict[str, set] = {s: set() for s in self.work.states}
        for e in events:
            for _, (state, key) in self.work.read_keys(e).items():
                if key is not None:
                    wanted[state].add(key)
        values = self.read(wanted)
        dirty: dict[str, dict] = {s: {} for s in self.work.states}
        for e in events:
            read = {
                name: (None if key is None else values[state].get(key))
                for name, (state, key) in self.work.read_keys(e).items()
            }
            ok, writes = self.work.step(e, read)
            if ok:
                for state, key, value in writes:
                    if key is not None and value is not None:
                        values[state][key] = value
                        dirty[state][key] = value
        self.write(dirty)
        now = time.time()
        for e in events:
            if int(e["event_id"]) != self.sentinel:
                self.done[int(e["event_id"])] = now

    def setup(self) -> None:
        raise NotImplementedError

    def read(self, keys: dict[str, set]) -> dict[str, dict]:
        raise NotImplementedError

    def write(self, values: dict[str, dict]) -> None:
        raise NotImplementedError


class DeltaMerge(ForeachBatchPeer):
    """The State in one Delta table per State (key and value columns): the touched keys read with
    a filter, the new values written with one MERGE per State per batch."""

    name = "delta-merge"

    def setup(self) -> None:
        self.paths = {s: str(self.workdir / f"delta-{s}") for s in self.work.states}
        for state, (key, value) in self.work.states.items():
            rows = [(k, *v) for k, v in self.work.initial.get(state, {}).items()]
            self.spark.createDataFrame(rows, f"{key}, {value}").write.format("delta").save(self.paths[state])

    def read(self, keys: dict[str, set]) -> dict[str, dict]:
        out = {}
        for state, (key, value) in self.work.states.items():
            k, cols = _columns(key)[0], _columns(value)
            if not keys[state]:
                out[state] = {}
                continue
            table = self.spark.read.format("delta").load(self.paths[state])
            found = table.where(table[k].isin(list(keys[state]))).collect()
            out[state] = {r[k]: _value(r, cols) for r in found}
        return out

    def write(self, values: dict[str, dict]) -> None:
        for state, (key, value) in self.work.states.items():
            if not values[state]:
                continue
            k, cols = _columns(key)[0], _columns(value)
            view = f"txn_bench_updates_{self.uid}_{state}"
            rows = [(key_, *v) for key_, v in values[state].items()]
            self.spark.createDataFrame(rows, f"{key}, {value}").createOrReplaceTempView(view)
            sets = ", ".join(f"t.{c} = s.{c}" for c in cols)
            self.spark.sql(
                f"MERGE INTO delta.`{self.paths[state]}` t USING {view} s ON t.{k} = s.{k} "
                f"WHEN MATCHED THEN UPDATE SET {sets} WHEN NOT MATCHED THEN INSERT *"
            )

    def final(self) -> dict[str, dict]:
        out = {}
        for state, (key, value) in self.work.states.items():
            k, cols = _columns(key)[0], _columns(value)
            rows = self.spark.read.format("delta").load(self.paths[state]).collect()
            out[state] = {r[k]: _value(r, cols) for r in rows}
        return out


class RedisStore(ForeachBatchPeer):
    """The State in Redis (one string per key, the value tuple as JSON): the touched keys read with
    one MGET per State, the new values written with one MSET per State, per batch."""

    name = "redis"
    _lock = threading.Lock()

    def setup(self) -> None:
        import redis

        self.redis = redis.Redis(host="127.0.0.1", port=self.redis_port)
        self.prefix = f"txn:{self.uid}:"
        for state in self.work.states:
            initial = self.work.initial.get(state, {})
            items = list(initial.items())
            for i in range(0, len(items), 5000):
                self.redis.mset({self._key(state, k): json.dumps(list(v)) for k, v in items[i : i + 5000]})

    def _key(self, state: str, key) -> str:
        return f"{self.prefix}{state}:{key}"

    def read(self, keys: dict[str, set]) -> dict[str, dict]:
        out = {}
        for state in self.work.states:
            ks = list(keys[state])
            got = self.redis.mget([self._key(state, k) for k in ks]) if ks else []
            out[state] = {k: tuple(json.loads(v)) for k, v in zip(ks, got) if v is not None}
        return out

    def write(self, values: dict[str, dict]) -> None:
        for state in self.work.states:
            if values[state]:
                self.redis.mset({self._key(state, k): json.dumps(list(v)) for k, v in values[state].items()})

    def final(self) -> dict[str, dict]:
        out = {}
        for state, (key, _) in self.work.states.items():
            cast = str if "STRING" in key.upper() else int
            prefix = f"{self.prefix}{state}:"
            names = list(self.redis.scan_iter(match=prefix + "*", count=10_000))
            got = self.redis.mget(names) if names else []
            out[state] = {cast(n.decode()[len(prefix) :]): tuple(json.loads(v)) for n, v in zip(names, got)}
        return out


METHODS = {m.name: m for m in (Plugin, DeltaMerge, RedisStore)}
