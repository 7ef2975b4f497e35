"""The sides of a point: each application on sharedstate (partial States, DGS's barrier as a global
fetch) and as a Spark user writes it today (a foreachBatch that keeps the history and recomputes
the global aggregate each micro-batch for what has become final, then joins it).

Every side reads the same live file directories (one file per micro-batch per stream), and hands
each batch of output rows to `Recorder`, which notes the wall time the batch was done."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.streaming import StreamingQuery

import sharedstate as ss
from sharedstate.demos.streaming import file_stream, state_sink
from sharedstate.testing.learning import LR

TRIGGER = "100 milliseconds"


class Recorder:
    """Collects the output batches of a foreachBatch sink with the time each was done."""

    def __init__(self, columns: list[str]):
        self.columns = columns
        self.frames: list[pd.DataFrame] = []
        self._lock = threading.Lock()

    def __call__(self, df: DataFrame, _batch_id: int) -> None:
        self.add(df.select(*self.columns).toPandas())

    def add(self, frame: pd.DataFrame) -> None:
        if len(frame):
            with self._lock:
                self.frames.append(frame.assign(done_at=time.time()))

    def rows(self) -> int:
        with self._lock:
            return sum(len(f) for f in self.frames)

    def result(self) -> pd.DataFrame:
        with self._lock:
            frames = list(self.frames)
        return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=[*self.columns, "done_at"])


def _recorded(df: DataFrame, recorder: Recorder, checkpoint: Path) -> StreamingQuery:
    return (
        df.writeStream.foreachBatch(recorder)
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime=TRIGGER)
        .start()
    )


FRAUD_COLUMNS = ["tx_id", "rule_id", "total", "n", "flagged"]
LEARNING_COLUMNS = ["ev_id", "w"]


# ---- sharedstate ----


def sharedstate_fraud(
    spark: SparkSession, live: dict[str, Path], work: Path, uid: str, partitions: int, lateness: str, rec: Recorder
) -> list[StreamingQuery]:
    """demos/fraud.py's three queries: transactions into a partial `sum` State (one instance per
    writer task), rules as barriers (a global, read-committed fetch) into `rules`, transactions
    checked against the last rule."""
    totals_name, rules_name = f"bench_totals_{uid}", f"bench_rules_{uid}"
    totals = ss.State.create(
        spark, totals_name, key="k STRING", value="total BIGINT, n BIGINT", rule="sum", partial="sum", partitions=2
    )
    rules = ss.State.create(
        spark, rules_name, key="k STRING", value="factor DOUBLE, rule_id BIGINT, total BIGINT, n BIGINT", partitions=1
    )
    from sharedstate.testing.fraud import RULE_SCHEMA, TX_SCHEMA

    one = F.lit(1).cast("bigint")
    adds = file_stream(spark, TX_SCHEMA, live["tx"]).repartition(partitions, "tx_id")
    adds = adds.select(F.lit("all").alias("k"), "ts", F.col("amount").alias("total"), one.alias("n"))
    q1 = state_sink(adds, totals_name, "k", lateness, work / "ck-totals", TRIGGER)
    barrier = totals.fetch_join(file_stream(spark, RULE_SCHEMA, live["rules"]).withColumn("k", F.lit("all")), "k", "ts")
    found = barrier.select("k", "ts", "factor", "rule_id", "total", "n")
    q2 = state_sink(found, rules_name, "k", lateness, work / "ck-rules", TRIGGER)
    txs = file_stream(spark, TX_SCHEMA, live["tx"]).withColumn("k", F.lit("all"))
    checked = rules.fetch_join(txs, key="k", time="ts").select(
        "tx_id",
        "rule_id",
        "total",
        "n",
        F.when(F.col("n") > 0, F.col("amount") > F.col("factor") * F.col("total") / F.col("n")).alias("flagged"),
    )
    return [q1, q2, _recorded(checked, rec, work / "ck-checked")]


def sharedstate_learning(
    spark: SparkSession, live: dict[str, Path], work: Path, uid: str, partitions: int, lateness: str, rec: Recorder
) -> list[StreamingQuery]:
    """python/tests/test_partial_learning.py's trainer (SGD steps into a partial `sum` State, one
    instance per writer task) and scorer (each event with the merged model as of its time, BSP)."""
    from sharedstate.testing.learning import EVENT_SCHEMA, EXAMPLE_SCHEMA

    name = f"bench_model_{uid}"
    ss.State.create(spark, name, key="model STRING", value="w ARRAY<DOUBLE>", rule="sum", partial="sum", partitions=2)
    steps = (
        file_stream(spark, EXAMPLE_SCHEMA, live["ex"])
        .repartition(partitions, "ex_id")
        .select("model", "ts", F.expr(f"transform(x, v -> v * y * {LR}D)").alias("w"))
    )
    q1 = state_sink(steps, name, "model", lateness, work / "ck-train", TRIGGER)
    scored = ss.fetch_join(file_stream(spark, EVENT_SCHEMA, live["ev"]), name, key="model", time="ts")
    return [q1, _recorded(scored.select("ev_id", "w"), rec, work / "ck-score")]


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
    spark: SparkSession, live: dict[str, Path], work: Path, real_tx: int, lateness_us: int, rec: Recorder
) -> list[StreamingQuery]:
    """One foreachBatch query over both streams: appends transactions and rules to Parquet history
    tables; once the watermark-like bound passes a rule, recomputes its aggregate (every transaction
    at or before it: a range join over the whole transaction history) and keeps it; transactions
    below the bound are joined with the last final rule before them and checked."""
    from sharedstate.testing.fraud import RULE_SCHEMA, TX_SCHEMA

    tx = file_stream(spark, TX_SCHEMA, live["tx"]).select(
        F.lit("tx").alias("kind"),
        "tx_id",
        "ts",
        "amount",
        F.lit(None).cast("bigint").alias("rule_id"),
        F.lit(None).cast("double").alias("factor"),
    )
    ru = file_stream(spark, RULE_SCHEMA, live["rules"]).select(
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
    spark: SparkSession, live: dict[str, Path], work: Path, lateness_us: int, rec: Recorder
) -> list[StreamingQuery]:
    """One foreachBatch query over both streams: appends SGD steps and events to Parquet history
    tables; events below the bound (every step before them has arrived) not yet scored get the model
    as of their time recomputed from the step history (a range join, summed element-wise)."""
    from sharedstate.testing.learning import EVENT_SCHEMA, EXAMPLE_SCHEMA

    ex = file_stream(spark, EXAMPLE_SCHEMA, live["ex"]).select(
        F.lit("ex").alias("kind"),
        F.lit(None).cast("bigint").alias("ev_id"),
        "model",
        "ts",
        F.expr(f"transform(x, v -> v * y * {LR}D)").alias("x"),
    )
    ev = file_stream(spark, EVENT_SCHEMA, live["ev"]).select(F.lit("ev").alias("kind"), "ev_id", "model", "ts", "x")
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
