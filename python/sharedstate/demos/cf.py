"""SDG's online collaborative filtering (Algorithm 1) at a small scale, with a partitioned and a
partial State.

Ratings go into `user_items` (partitioned by user, `append`: each user's set of rated items) and,
through a read-committed fetch join of each rating with its user's items as of the rating's time,
into `co_occ`, a partial `sum` State of co-occurrence rows (each writer task adds its increments
to its own instance, as SDG's `@Partial` matrix). A recommendation for a user at time t reads the
user's items as of t, then each item's co-occurrence row as of t in global scope (the instances
merged, SDG's `@Global` access and merge), and sums them.

    python -m sharedstate.demos.cf
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

import pandas as pd
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import sharedstate as ss
from sharedstate.demos.streaming import file_stream, state_sink
from sharedstate.testing.adcamp import write_batches
from sharedstate.testing.cf import ITEMS, RATING_SCHEMA, Ratings, make_ratings, recommendations_oracle
from sharedstate.testing.streams import check_running, drained, wait_until


def run(spark: SparkSession, work: Ratings, workdir: Path, partitions: int = 2, prefix: str = "cf") -> dict:
    """Streams the ratings into both States, then answers the requests; returns {req_id: vector or None}."""
    users_name, cooc_name = f"{prefix}_user_items", f"{prefix}_co_occ"
    user_items = ss.State.create(spark, users_name, key="user STRING", value="items ARRAY<BIGINT>", rule="append")
    co_occ = ss.State.create(
        spark, cooc_name, key="row BIGINT", value="counts ARRAY<BIGINT>", rule="sum", partial="sum", partitions=2
    )
    write_batches(workdir / "ratings", work.batches)
    lateness = f"{work.lateness_s} seconds"

    def ratings() -> DataFrame:
        return file_stream(spark, RATING_SCHEMA, workdir / "ratings")

    def sink(df: DataFrame, state: str, key: str, ck: str):
        return state_sink(df, state, key, lateness, workdir / ck)

    q_users = sink(ratings().select("user", "ts", F.array("item").alias("items")), users_name, "user", "ck-users")
    # each rating with its user's items at its time (itself included): row i += e_j, row j += e_i
    rated = user_items.fetch_join(ratings(), key="user", time="ts").select(
        "ts", F.col("item").alias("i"), F.explode("items").alias("j")
    )
    both = "array(named_struct('r', i, 'c', j), if(i != j, named_struct('r', j, 'c', i), null))"
    pairs = rated.select("ts", F.explode(F.expr(f"filter({both}, p -> p is not null)")).alias("p"))
    unit = F.expr(f"transform(sequence(0, {ITEMS - 1}), k -> if(k = p.c, 1L, 0L))").alias("counts")
    # a fixed partitioning: one co_occ instance per task
    increments = pairs.select(F.col("p.r").alias("row"), "ts", unit).repartition(partitions, "row")
    q_cooc = sink(increments, cooc_name, "row", "ck-cooc")
    queries = (q_users, q_cooc)
    horizon = work.requests["ts"].max()

    def past_requests() -> bool:
        check_running(*queries)
        u = co_occ.progress()["update"]
        return u is not None and pd.Timestamp(u) > horizon

    try:
        wait_until(past_requests, 600, "co_occ's U past every request", interval=1.0)
        for q in queries:
            drained(q)
    finally:
        for q in queries:
            q.stop()
    requests = spark.createDataFrame(
        [(int(r.req_id), r.user, r.ts.to_pydatetime()) for r in work.requests.itertuples()],
        "req_id BIGINT, user STRING, ts TIMESTAMP",
    )
    items = user_items.fetch_join(requests, key="user", time="ts", how="inner").select(
        "req_id", "ts", F.explode("items").alias("row")
    )
    rows = co_occ.fetch_join(items, key="row", time="ts").select("req_id", "counts").toPandas()
    recs: dict = {int(r): None for r in work.requests["req_id"]}
    for req, part in rows.groupby("req_id"):
        recs[int(req)] = [int(sum(c[k] for c in part["counts"] if c is not None)) for k in range(ITEMS)]
    return recs


def main() -> int:
    spark = ss.session("sharedstate-cf-demo", master="local[4]")
    try:
        work = make_ratings(1)
        got = run(spark, work, Path(tempfile.mkdtemp(prefix="sharedstate-cf-")))
        same = got == recommendations_oracle(work)
        for req, vec in list(got.items())[:5]:
            print(req, vec)
        print(f"{len(got)} recommendations; equal to the sequential oracle: {same}")
        return 0 if same else 1
    finally:
        spark.stop()


if __name__ == "__main__":
    sys.exit(main())
