"""Fraud detection with a synchronisation barrier (DGS) built from partial States.

Transactions update a partial State `tx_totals` (key "all", value total and count, merged by
`sum`): each writer task adds to its own instance, with no coordination. A rule is a barrier: a
fetch join of the rule stream with `tx_totals` in global scope reads, read-committed, the merge of
every instance as of the rule's time, so it waits until every transaction writer has passed it and
then sees every transaction before it. The rule and that aggregate go into the State `rules`; a
fetch join of the transaction stream with `rules` checks each transaction against the last rule
before it and the aggregate up to that rule: flagged when its amount exceeds the rule's factor
times the mean amount. The demo runs the three queries on a generated workload and checks every
transaction against the sequential oracle.

    python -m sharedstate.demos.fraud --partitions 2
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
from pathlib import Path

import pandas as pd
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import sharedstate as ss
from sharedstate.demos.streaming import TRIGGER, file_stream, state_sink
from sharedstate.testing.adcamp import write_batches
from sharedstate.testing.fraud import RULE_SCHEMA, TX_SCHEMA, Fraud, fraud_oracle, make_fraud
from sharedstate.testing.streams import check_running, drained, wait_until


def run(spark: SparkSession, work: Fraud, workdir: Path, partitions: int, prefix: str = "fraud") -> pd.DataFrame:
    """Runs the three queries until every transaction is checked; returns the checked transactions."""
    totals_name, rules_name = f"{prefix}_tx_totals", f"{prefix}_rules"
    totals = ss.State.create(
        spark, totals_name, key="k STRING", value="total BIGINT, n BIGINT", rule="sum", partial="sum", partitions=2
    )
    rules = ss.State.create(
        spark, rules_name, key="k STRING", value="factor DOUBLE, rule_id BIGINT, total BIGINT, n BIGINT", partitions=1
    )
    write_batches(workdir / "tx", work.tx_batches)
    write_batches(workdir / "rules", work.rule_batches)
    lateness = f"{work.lateness_s} seconds"

    def stream(schema: str, name: str):
        return file_stream(spark, schema, workdir / name)

    def sink(df, state: str, key: str, ck: str):
        return state_sink(df, state, key, lateness, workdir / ck)

    # 1. each writer task adds its transactions to its own instance of the total
    adds = stream(TX_SCHEMA, "tx").repartition(partitions, "tx_id")
    one = F.lit(1).cast("bigint")
    adds = adds.select(F.lit("all").alias("k"), "ts", F.col("amount").alias("total"), one.alias("n"))
    q_totals = sink(adds, totals_name, "k", "ck-totals")
    # 2. a rule is answered once every instance's writer has passed it: the barrier
    barrier = totals.fetch_join(stream(RULE_SCHEMA, "rules").withColumn("k", F.lit("all")), key="k", time="ts")
    q_rules = sink(barrier.select("k", "ts", "factor", "rule_id", "total", "n"), rules_name, "k", "ck-rules")
    # 3. each transaction against the last rule before it and the aggregate up to that rule
    txs = stream(TX_SCHEMA, "tx").withColumn("k", F.lit("all"))
    checked = rules.fetch_join(txs, key="k", time="ts").select(
        "tx_id",
        "rule_id",
        "total",
        "n",
        F.when(F.col("n") > 0, F.col("amount") > F.col("factor") * F.col("total") / F.col("n")).alias("flagged"),
    )
    out = f"{prefix}_checked"
    q_checked = (
        checked.writeStream.format("memory")
        .queryName(out)
        .option("checkpointLocation", str(workdir / "ck-checked"))
        .trigger(processingTime=TRIGGER)
        .start()
    )
    queries = (q_totals, q_rules, q_checked)

    def done() -> bool:
        check_running(*queries)
        return spark.table(out).where(f"tx_id < {work.real_tx}").count() >= work.real_tx

    try:
        wait_until(done, timeout=600, what=f"{work.real_tx} checked transactions")
        drained(q_checked)
        got = spark.table(out).where(f"tx_id < {work.real_tx}").toPandas()
    finally:
        for q in queries:
            q.stop()
    return got.sort_values("tx_id").reset_index(drop=True)


def comparable(frame: pd.DataFrame) -> pd.DataFrame:
    out = frame[["tx_id", "rule_id", "total", "n", "flagged"]].copy()
    for c in ("rule_id", "total", "n"):
        out[c] = out[c].astype("Int64")
    out["flagged"] = out["flagged"].astype("boolean")
    return out.sort_values("tx_id").reset_index(drop=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--partitions", type=int, default=2, help="writer tasks, one instance each")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    spark = ss.session("sharedstate-fraud-demo", master="local[4]")
    workdir = Path(tempfile.mkdtemp(prefix="sharedstate-fraud-"))
    try:
        work = make_fraud(args.seed)
        got = comparable(run(spark, work, workdir, args.partitions))
        expected = comparable(fraud_oracle(work))
        same = got.equals(expected)
        print(got.groupby("rule_id", dropna=False)["flagged"].agg(["count", "sum"]).to_string())
        print(f"{len(got)} transactions checked, {int(got['flagged'].sum())} flagged; equal to the oracle: {same}")
        return 0 if same else 1
    finally:
        spark.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
