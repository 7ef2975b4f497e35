"""The sides of a point: each application on sharedstate (partial States, DGS's barrier as a global
fetch) and as a Spark user writes it today (a foreachBatch that keeps the history and recomputes
the global aggregate each micro-batch for what has become final, then joins it).

Every side reads the same live file directories with the same batch policy (`Setup.files_per_trigger`:
one file per micro-batch, or every file visible when the micro-batch starts), and hands each batch of
output rows to `Recorder`, which notes the wall time the batch was done. `Setup.partitions` is the
parallelism of every query of a side (see `parallelism`)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

import sharedstate as ss
from sharedstate.demos.streaming import state_sink
from sharedstate.testing.learning import LR

TRIGGER = "100 milliseconds"


@dataclass(frozen=True)
class Setup:
    """How a side runs: `partitions` (P) tasks in every stage of every query, and the batch policy,
    `files_per_trigger` files per micro-batch at most (None: every file visible, as a backlogged
    Kafka source without maxOffsetsPerTrigger takes everything there is)."""

    partitions: int
    files_per_trigger: int | None = 1


def file_stream(spark: SparkSession, schema: str, directory: Path, setup: Setup) -> DataFrame:
    """The parquet files in `directory` in modification-time order, at most `files_per_trigger` a micro-batch."""
    reader = spark.readStream.schema(schema)
    if setup.files_per_trigger is not None:
        reader = reader.option("maxFilesPerTrigger", setup.files_per_trigger)
    return reader.parquet(str(directory))


# A micro-batch's files are read as `spark.sql.files.minPartitionNum` splits, however many files the
# batch has (a split may hold many files: their open cost is counted, but no split is capped below 1 GiB).
PARALLELISM_CONF = (
    "spark.sql.shuffle.partitions",
    "spark.sql.files.minPartitionNum",
    "spark.sql.files.maxPartitionBytes",
)


@contextmanager
def parallelism(spark: SparkSession, partitions: int) -> Iterator[None]:
    """Queries started inside read their files as `partitions` splits and shuffle into `partitions`
    (a streaming query keeps the session's settings of when it started)."""
    before = {k: spark.conf.get(k, None) for k in PARALLELISM_CONF}
    spark.conf.set("spark.sql.shuffle.partitions", str(partitions))
    spark.conf.set("spark.sql.files.minPartitionNum", str(partitions))
    spark.conf.set("spark.sql.files.maxPartitionBytes", str(1 << 30))
    try:
        yield
    finally:
        for k, v in before.items():
            if v is None:
                spark.conf.unset(k)
            else:
                spark.conf.set(k, v)


class Recorder:
    """Collects the output batches of a foreachBatch sink with the time each was done; `rows()`
    counts the distinct ids output (collaborative filtering outputs a row per request and item)."""

    def __init__(self, columns: list[str]):
        self.columns = columns
        self.frames: list[pd.DataFrame] = []
        self._ids: set = set()
        self._lock = threading.Lock()

    def __call__(self, df: DataFrame, _batch_id: int) -> None:
        self.add(df.select(*self.columns).toPandas())

    def add(self, frame: pd.DataFrame) -> None:
        if len(frame):
            with self._lock:
                self.frames.append(frame.assign(done_at=time.time()))
                self._ids.update(frame[self.columns[0]].tolist())

    def rows(self) -> int:
        with self._lock:
            return len(self._ids)

    def result(self) -> pd.DataFrame:
        with self._lock:
            frames = list(self.frames)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*self.columns, "done_at"])


def _recorded(df: DataFrame, recorder: Recorder, checkpoint: Path, name: str) -> StreamingQuery:
    return (
        df.writeStream.queryName(name)
        .foreachBatch(recorder)
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime=TRIGGER)
        .start()
    )


FRAUD_COLUMNS = ["tx_id", "rule_id", "total", "n", "flagged"]
BARRIER_COLUMNS = ["rule_id", "total", "n"]
LEARNING_COLUMNS = ["ev_id", "w"]
CF_COLUMNS = ["req_id", "counts"]


# ---- sharedstate ----


def _value_barrier(
    spark: SparkSession, live: dict[str, Path], work: Path, uid: str, setup: Setup, lateness: str
) -> tuple[StreamingQuery, DataFrame]:
    """The value barrier: transactions (the values) into a partial `sum` State, one instance per
    writer task; returns that query and the rules (the barriers, `partitions` tasks too) each
    joined, by a global read-committed fetch, with the total and count of every value at or before it."""
    from sharedstate.testing.fraud import RULE_SCHEMA, TX_SCHEMA

    totals_name = f"bench_totals_{uid}"
    totals = ss.State.create(
        spark, totals_name, key="k STRING", value="total BIGINT, n BIGINT", rule="sum", partial="sum", partitions=2
    )
    one = F.lit(1).cast("bigint")
    partitions = setup.partitions
    adds = file_stream(spark, TX_SCHEMA, live["tx"], setup).repartition(partitions, "tx_id")
    adds = adds.select(F.lit("all").alias("k"), "ts", F.col("amount").alias("total"), one.alias("n"))
    q1 = state_sink(adds, totals_name, "k", lateness, work / "ck-totals", TRIGGER, f"writer_{uid}")
    rules = file_stream(spark, RULE_SCHEMA, live["rules"], setup).repartition(partitions, "rule_id")
    barrier = totals.fetch_join(rules.withColumn("k", F.lit("all")), "k", "ts")
    return q1, barrier


def sharedstate_barrier(
    spark: SparkSession, live: dict[str, Path], work: Path, uid: str, setup: Setup, lateness: str, rec: Recorder
) -> list[StreamingQuery]:
    """DGS's value barrier: each barrier with the aggregate of every value before it (the window
    since the barrier before is the difference of the two)."""
    q1, barrier = _value_barrier(spark, live, work, uid, setup, lateness)
    return [q1, _recorded(barrier.select(*BARRIER_COLUMNS), rec, work / "ck-barriers", f"barriers_{uid}")]


def sharedstate_fraud(
    spark: SparkSession, live: dict[str, Path], work: Path, uid: str, setup: Setup, lateness: str, rec: Recorder
) -> list[StreamingQuery]:
    """demos/fraud.py's three queries: the value barrier (transactions into a partial `sum` State,
    rules as barriers) with the barriers into `rules`, then transactions checked against the last
    rule; each query with `setup.partitions` tasks (the rules too: `_value_barrier`)."""
    from sharedstate.testing.fraud import TX_SCHEMA

    partitions = setup.partitions
    rules_name = f"bench_rules_{uid}"
    rules = ss.State.create(
        spark, rules_name, key="k STRING", value="factor DOUBLE, rule_id BIGINT, total BIGINT, n BIGINT", partitions=1
    )
    q1, barrier = _value_barrier(spark, live, work, uid, setup, lateness)
    found = barrier.select("k", "ts", "factor", "rule_id", "total", "n")
    q2 = state_sink(found, rules_name, "k", lateness, work / "ck-rules", TRIGGER, f"barriers_{uid}")
    txs = (
        file_stream(spark, TX_SCHEMA, live["tx"], setup).repartition(partitions, "tx_id").withColumn("k", F.lit("all"))
    )
    checked = rules.fetch_join(txs, key="k", time="ts").select(
        "tx_id",
        "rule_id",
        "total",
        "n",
        F.when(F.col("n") > 0, F.col("amount") > F.col("factor") * F.col("total") / F.col("n")).alias("flagged"),
    )
    return [q1, q2, _recorded(checked, rec, work / "ck-checked", f"check_{uid}")]


def sharedstate_learning(
    spark: SparkSession, live: dict[str, Path], work: Path, uid: str, setup: Setup, lateness: str, rec: Recorder
) -> list[StreamingQuery]:
    """python/tests/test_partial_learning.py's trainer (SGD steps into a partial `sum` State, one
    instance per writer task) and scorer (each event with the merged model as of its time, BSP)."""
    from sharedstate.testing.learning import EVENT_SCHEMA, EXAMPLE_SCHEMA

    partitions = setup.partitions
    name = f"bench_model_{uid}"
    ss.State.create(spark, name, key="model STRING", value="w ARRAY<DOUBLE>", rule="sum", partial="sum", partitions=2)
    steps = (
        file_stream(spark, EXAMPLE_SCHEMA, live["ex"], setup)
        .repartition(partitions, "ex_id")
        .select("model", "ts", F.expr(f"transform(x, v -> v * y * {LR}D)").alias("w"))
    )
    q1 = state_sink(steps, name, "model", lateness, work / "ck-train", TRIGGER, f"trainer_{uid}")
    events = file_stream(spark, EVENT_SCHEMA, live["ev"], setup).repartition(partitions, "ev_id")
    scored = ss.fetch_join(events, name, key="model", time="ts")
    return [q1, _recorded(scored.select("ev_id", "w"), rec, work / "ck-score", f"scorer_{uid}")]


def sharedstate_cf(
    spark: SparkSession, live: dict[str, Path], work: Path, uid: str, setup: Setup, lateness: str, rec: Recorder
) -> list[StreamingQuery]:
    """demos/cf.py as three streaming queries: ratings into `user_items` (partitioned, `append`);
    each rating with its user's items (a read-committed fetch join) into the partial co-occurrence
    State (one instance per writer task); each request with its user's items as of its time, then
    each item's co-occurrence row in global scope, one output row per request and item (summed
    per request by the checker). The last two queries with `partitions` tasks."""
    from workloads import REQUEST_SCHEMA

    from sharedstate.testing.cf import ITEMS, RATING_SCHEMA

    partitions = setup.partitions
    users_name, cooc_name = f"bench_user_items_{uid}", f"bench_co_occ_{uid}"
    user_items = ss.State.create(spark, users_name, key="user STRING", value="items ARRAY<BIGINT>", rule="append")
    co_occ = ss.State.create(
        spark, cooc_name, key="row BIGINT", value="counts ARRAY<BIGINT>", rule="sum", partial="sum", partitions=2
    )
    ratings = file_stream(spark, RATING_SCHEMA, live["ratings"], setup)
    q1 = state_sink(
        ratings.select("user", "ts", F.array("item").alias("items")),
        users_name,
        "user",
        lateness,
        work / "ck-users",
        name=f"users_{uid}",
    )
    rated = user_items.fetch_join(
        file_stream(spark, RATING_SCHEMA, live["ratings"], setup).repartition(partitions, "user"), key="user", time="ts"
    ).select("ts", F.col("item").alias("i"), F.explode("items").alias("j"))
    both = "array(named_struct('r', i, 'c', j), if(i != j, named_struct('r', j, 'c', i), null))"
    pairs = rated.select("ts", F.explode(F.expr(f"filter({both}, p -> p is not null)")).alias("p"))
    unit = F.expr(f"transform(sequence(0, {ITEMS - 1}), k -> if(k = p.c, 1L, 0L))").alias("counts")
    increments = pairs.select(F.col("p.r").alias("row"), "ts", unit).repartition(partitions, "row")
    q2 = state_sink(increments, cooc_name, "row", lateness, work / "ck-cooc", TRIGGER, f"cooc_{uid}")
    requests = file_stream(spark, REQUEST_SCHEMA, live["requests"], setup).repartition(partitions, "req_id")
    items = user_items.fetch_join(requests, key="user", time="ts").select(
        "req_id", "ts", F.explode_outer("items").alias("row")
    )
    recs = co_occ.fetch_join(items, key="row", time="ts").select("req_id", "counts")
    return [q1, q2, _recorded(recs, rec, work / "ck-recs", f"requests_{uid}")]


# ---- what a Spark user writes today ----


class _Bound:
    """The time below which the input is final: the minimum over the streams of the newest time
    seen minus the lateness (what a watermark says), in microseconds."""

    def __init__(self, streams: list[str], lateness_us: int):
        self.newest = {s: None for s in streams}
        self.lateness_us = lateness_us
        self.done = -(2**62)  # everything below was emitted

    def see(self, batch: DataFrame, kind: str = "kind") -> int | None:
        for row in batch.groupBy(kind).agg(F.max(F.unix_micros("ts")).alias("m")).collect():
            old = self.newest[row[kind]]
            self.newest[row[kind]] = row["m"] if old is None else max(old, row["m"])
        if any(v is None for v in self.newest.values()):
            return None
        return min(self.newest.values()) - self.lateness_us


def peer_fraud(
    spark: SparkSession,
    live: dict[str, Path],
    work: Path,
    setup: Setup,
    real_tx: int,
    lateness_us: int,
    rec: Recorder,
    barriers_only: bool = False,
) -> list[StreamingQuery]:
    """One foreachBatch query over both streams: appends transactions and rules to Parquet history
    tables; once the watermark-like bound passes a rule, recomputes its aggregate (every transaction
    at or before it: a range join over the whole transaction history) and keeps it; transactions
    below the bound are joined with the last final rule before them and checked. `barriers_only`
    (the value barrier): the rules' aggregates are the output."""
    from sharedstate.testing.fraud import RULE_SCHEMA, TX_SCHEMA

    tx = file_stream(spark, TX_SCHEMA, live["tx"], setup).select(
        F.lit("tx").alias("kind"),
        "tx_id",
        "ts",
        "amount",
        F.lit(None).cast("bigint").alias("rule_id"),
        F.lit(None).cast("double").alias("factor"),
    )
    ru = file_stream(spark, RULE_SCHEMA, live["rules"], setup).select(
        F.lit("rule").alias("kind"),
        F.lit(None).cast("bigint").alias("tx_id"),
        "ts",
        F.lit(None).cast("bigint").alias("amount"),
        "rule_id",
        "factor",
    )
    hist_tx, hist_rules, finals = work / "hist-tx", work / "hist-rules", work / "rule-aggregates"
    spark.createDataFrame([], "tx_id BIGINT, ts TIMESTAMP, amount BIGINT").write.parquet(str(hist_tx))
    spark.createDataFrame([], "rule_id BIGINT, ts TIMESTAMP, factor DOUBLE").write.parquet(str(hist_rules))
    spark.createDataFrame([], "rule_id BIGINT, rts TIMESTAMP, factor DOUBLE, total BIGINT, n BIGINT").write.parquet(
        str(finals)
    )
    bound = _Bound(["tx", "rule"], lateness_us)

    def batch(df: DataFrame, _batch_id: int) -> None:
        df.persist()
        try:
            df.where("kind = 'tx'").select("tx_id", "ts", "amount").write.mode("append").parquet(str(hist_tx))
            df.where("kind = 'rule'").select("rule_id", "ts", "factor").write.mode("append").parquet(str(hist_rules))
            b = bound.see(df)
        finally:
            df.unpersist()
        if b is None or b <= bound.done:
            return
        lo, hi = bound.done, b
        all_tx = spark.read.parquet(str(hist_tx))
        new_rules = spark.read.parquet(str(hist_rules)).where((F.unix_micros("ts") >= lo) & (F.unix_micros("ts") < hi))
        # the global aggregate up to each rule that became final: over the whole history
        t = all_tx.alias("t")
        aggs = (
            new_rules.alias("r")
            .join(t, F.col("t.ts") <= F.col("r.ts"), "left")
            .groupBy("r.rule_id", F.col("r.ts").alias("rts"), "r.factor")
            .agg(F.sum("t.amount").alias("total"), F.count("t.amount").alias("n"))
            .select("rule_id", "rts", "factor", "total", F.expr("if(n = 0, null, n)").alias("n"))
        )
        if barriers_only:
            rec.add(aggs.select(*BARRIER_COLUMNS).toPandas())
            bound.done = hi
            return
        aggs.write.mode("append").parquet(str(finals))
        due = all_tx.where((F.unix_micros("ts") >= lo) & (F.unix_micros("ts") < hi) & (F.col("tx_id") < real_tx))
        rules = spark.read.parquet(str(finals))
        last = (
            due.alias("d")
            .join(F.broadcast(rules.alias("r")), F.col("r.rts") <= F.col("d.ts"), "left")
            .groupBy("d.tx_id", "d.amount")
            .agg(F.max_by(F.struct("r.rule_id", "r.factor", "r.total", "r.n"), F.col("r.rts")).alias("r"))
        )
        out = last.select(
            "tx_id",
            F.col("r.rule_id").alias("rule_id"),
            F.col("r.total").alias("total"),
            F.col("r.n").alias("n"),
            F.when(F.col("r.n") > 0, F.col("amount") > F.col("r.factor") * F.col("r.total") / F.col("r.n")).alias(
                "flagged"
            ),
        )
        rec.add(out.toPandas())
        bound.done = hi

    q = (
        tx.unionByName(ru)
        .writeStream.foreachBatch(batch)
        .option("checkpointLocation", str(work / "ck-peer"))
        .trigger(processingTime=TRIGGER)
        .start()
    )
    return [q]


def peer_learning(
    spark: SparkSession, live: dict[str, Path], work: Path, setup: Setup, lateness_us: int, rec: Recorder
) -> list[StreamingQuery]:
    """One foreachBatch query over both streams: appends SGD steps and events to Parquet history
    tables; events below the bound (every step before them has arrived) not yet scored get the model
    as of their time recomputed from the step history (a range join, summed element-wise)."""
    from sharedstate.testing.learning import EVENT_SCHEMA, EXAMPLE_SCHEMA

    ex = file_stream(spark, EXAMPLE_SCHEMA, live["ex"], setup).select(
        F.lit("ex").alias("kind"),
        F.lit(None).cast("bigint").alias("ev_id"),
        "model",
        "ts",
        F.expr(f"transform(x, v -> v * y * {LR}D)").alias("x"),
    )
    ev = file_stream(spark, EVENT_SCHEMA, live["ev"], setup).select(
        F.lit("ev").alias("kind"), "ev_id", "model", "ts", "x"
    )
    steps, events, scored = work / "hist-steps", work / "hist-events", work / "scored-ids"
    spark.createDataFrame([], "model STRING, ts TIMESTAMP, w ARRAY<DOUBLE>").write.parquet(str(steps))
    spark.createDataFrame([], "ev_id BIGINT, model STRING, ts TIMESTAMP").write.parquet(str(events))
    spark.createDataFrame([], "ev_id BIGINT").write.parquet(str(scored))
    bound = _Bound(["ex"], lateness_us)

    def batch(df: DataFrame, _batch_id: int) -> None:
        df.persist()
        try:
            df.where("kind = 'ex'").select("model", "ts", F.col("x").alias("w")).write.mode("append").parquet(
                str(steps)
            )
            df.where("kind = 'ev'").select("ev_id", "model", "ts").write.mode("append").parquet(str(events))
            b = bound.see(df.where("kind = 'ex'"))
        finally:
            df.unpersist()
        if b is None:
            return
        due = (
            spark.read.parquet(str(events))
            .where(F.unix_micros("ts") < b)
            .join(spark.read.parquet(str(scored)), "ev_id", "left_anti")
            .persist()
        )
        try:
            s = spark.read.parquet(str(steps)).alias("s")
            parts = (
                due.alias("e")
                .join(s, (F.col("s.model") == F.col("e.model")) & (F.col("s.ts") <= F.col("e.ts")), "left")
                .select("e.ev_id", F.posexplode_outer("s.w").alias("pos", "v"))
                .groupBy("ev_id", "pos")
                .agg(F.sum("v").alias("v"))
            )
            model = parts.groupBy("ev_id").agg(F.array_sort(F.collect_list(F.struct("pos", "v"))).alias("pv"))
            out = model.select(
                "ev_id", F.expr("if(pv[0].pos is null, null, transform(pv, p -> p.v))").alias("w")
            ).toPandas()
            due.select("ev_id").write.mode("append").parquet(str(scored))
        finally:
            due.unpersist()
        rec.add(out)

    q = (
        ex.unionByName(ev)
        .writeStream.foreachBatch(batch)
        .option("checkpointLocation", str(work / "ck-peer"))
        .trigger(processingTime=TRIGGER)
        .start()
    )
    return [q]


def peer_cf(
    spark: SparkSession, live: dict[str, Path], work: Path, setup: Setup, lateness_us: int, rec: Recorder
) -> list[StreamingQuery]:
    """One foreachBatch query over ratings and requests: appends both to Parquet history tables;
    requests below the bound (every rating before them has arrived) not yet answered get, from the
    whole rating history recomputed each micro-batch, their user's items as of their time and the
    co-occurrence counts of those items' rows as of their time (SDG's matrix as a global aggregate:
    each rating paired with its user's earlier items, then a range join with the requests)."""
    from workloads import REQUEST_SCHEMA

    from sharedstate.testing.cf import ITEMS, RATING_SCHEMA

    ra = file_stream(spark, RATING_SCHEMA, live["ratings"], setup).select(
        F.lit("rating").alias("kind"), F.lit(None).cast("bigint").alias("req_id"), "user", "item", "ts"
    )
    rq = file_stream(spark, REQUEST_SCHEMA, live["requests"], setup).select(
        F.lit("request").alias("kind"), "req_id", "user", F.lit(None).cast("bigint").alias("item"), "ts"
    )
    hist, requests, answered = work / "hist-ratings", work / "hist-requests", work / "answered-ids"
    spark.createDataFrame([], RATING_SCHEMA).write.parquet(str(hist))
    spark.createDataFrame([], REQUEST_SCHEMA).write.parquet(str(requests))
    spark.createDataFrame([], "req_id BIGINT").write.parquet(str(answered))
    bound = _Bound(["rating"], lateness_us)

    def batch(df: DataFrame, _batch_id: int) -> None:
        df.persist()
        try:
            df.where("kind = 'rating'").select("user", "item", "ts").write.mode("append").parquet(str(hist))
            df.where("kind = 'request'").select("req_id", "user", "ts").write.mode("append").parquet(str(requests))
            b = bound.see(df.where("kind = 'rating'"))
        finally:
            df.unpersist()
        if b is None:
            return
        due = (
            spark.read.parquet(str(requests))
            .where(F.unix_micros("ts") < b)
            .join(spark.read.parquet(str(answered)), "req_id", "left_anti")
            .persist()
        )
        try:
            r, s = spark.read.parquet(str(hist)).alias("r"), spark.read.parquet(str(hist)).alias("s")
            # each rating with its user's items at its time (a set): row i += e_j and row j += e_i
            mine = (
                r.join(s, (F.col("r.user") == F.col("s.user")) & (F.col("s.ts") <= F.col("r.ts")))
                .select(F.col("r.ts").alias("ts"), F.col("r.item").alias("i"), F.col("s.item").alias("j"))
                .distinct()
            )
            cells = mine.select("ts", F.col("i").alias("row"), F.col("j").alias("col")).unionByName(
                mine.where("i != j").select("ts", F.col("j").alias("row"), F.col("i").alias("col"))
            )
            h = spark.read.parquet(str(hist)).alias("h")
            items = (
                due.alias("q")
                .join(h, (F.col("h.user") == F.col("q.user")) & (F.col("h.ts") <= F.col("q.ts")))
                .select("q.req_id", F.col("q.ts").alias("qts"), F.col("h.item").alias("row"))
                .distinct()
            )
            counts = (
                items.join(cells, (cells["row"] == items["row"]) & (cells["ts"] <= items["qts"]))
                .groupBy("req_id", "col")
                .count()
                .toPandas()
            )
            ids = due.select("req_id").toPandas()["req_id"].tolist()
            due.select("req_id").write.mode("append").parquet(str(answered))
        finally:
            due.unpersist()
        vec: dict = {int(i): None for i in ids}
        for req, c, n in zip(counts["req_id"], counts["col"], counts["count"]):
            if vec[int(req)] is None:
                vec[int(req)] = [0] * ITEMS
            vec[int(req)][int(c)] += int(n)
        rec.add(pd.DataFrame({"req_id": list(vec), "counts": list(vec.values())}))

    q = (
        ra.unionByName(rq)
        .writeStream.foreachBatch(batch)
        .option("checkpointLocation", str(work / "ck-peer"))
        .trigger(processingTime=TRIGGER)
        .start()
    )
    return [q]
