"""The three stateful queries and the providers of the state store benchmark (see benchmarks/README.md).

Every source is Spark's `rate-micro-batch`: batch b holds `rows` rows with values b*rows .. (b+1)*rows-1
and the event time START_MS + b seconds, whatever the wall clock, so every provider sees the same
batches (and a restarted query the same batch again).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

START_MS = 1_700_000_000_000
PRIME = 1_000_003  # the key of value v is (v * PRIME) % keys: a bijection on 0..keys-1 (PRIME is prime, > keys)

PROVIDERS = {
    "hdfs": {
        "spark.sql.streaming.stateStore.providerClass": (
            "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"
        ),
    },
    "rocksdb": {
        "spark.sql.streaming.stateStore.providerClass": (
            "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
        ),
        "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    },
    "sharedstate": {
        "spark.sql.streaming.stateStore.providerClass": "io.sharedstate.spark.statestore.SharedStateStoreProvider",
    },
}
PROVIDER_CLASS_FILE = {"sharedstate": "io/sharedstate/spark/statestore/SharedStateStoreProvider.class"}
QUERIES = ("aggregation", "dedup", "join")
# what compare_providers.py reports per provider and query (medians over runs, ratios to RocksDB)
METRICS = (
    "batch_p50_ms",
    "batch_p99_ms",
    "add_batch_p50_ms",
    "state_memory_bytes",
    "rss_bytes",
    "checkpoint_bytes",
    "recovery_ms",
)


@dataclass(frozen=True)
class Sizes:
    """One run's sizes. The aggregation's state reaches `agg_keys` (window, key) groups after
    agg_keys / agg_rows batches and then only updates them; dedup keeps the ids of the current and
    the previous 10-second bucket; the join keeps both sides for the watermark delay plus the range
    (about 6 batches of impressions and 3 of clicks)."""

    agg_keys: int
    agg_rows: int
    agg_batches: int
    dedup_ids: int
    dedup_rows: int
    dedup_batches: int
    join_rows: int
    join_batches: int
    warmup_batches: int  # left out of the batch-duration percentiles (JIT, first state files)
    partitions: int = 4

    def batches(self, query: str) -> int:
        return {"aggregation": self.agg_batches, "dedup": self.dedup_batches, "join": self.join_batches}[query]

    def to_json(self) -> dict:
        return asdict(self)


FULL = Sizes(
    agg_keys=1_000_000,
    agg_rows=250_000,
    agg_batches=8,
    dedup_ids=250_000,
    dedup_rows=50_000,
    dedup_batches=10,
    join_rows=25_000,
    join_batches=10,
    warmup_batches=1,
)
QUICK = Sizes(
    agg_keys=10_000,
    agg_rows=5_000,
    agg_batches=4,
    dedup_ids=5_000,
    dedup_rows=2_000,
    dedup_batches=4,
    join_rows=1_000,
    join_batches=4,
    warmup_batches=1,
)


def _rate(spark, rows: int):
    return (
        spark.readStream.format("rate-micro-batch")
        .option("rowsPerBatch", rows)
        .option("startTimestamp", START_MS)
        .option("advanceMillisPerBatch", 1000)
        .option("numPartitions", 2)
        .load()
    )


def aggregation(spark, s: Sizes):
    """count and sum per (1-hour window, key): every batch lands in one window, so the state holds every
    key seen so far (s.agg_keys once they all came) and each batch updates s.agg_rows of them."""
    from pyspark.sql import functions as F

    df = _rate(spark, s.agg_rows).select(
        ((F.col("value") * PRIME) % s.agg_keys).alias("key"), F.col("value").alias("v"), F.col("timestamp")
    )
    out = (
        df.withWatermark("timestamp", "10 minutes")
        .groupBy(F.window("timestamp", "1 hour"), "key")
        .agg(F.count("*").alias("n"), F.sum("v").alias("total"))
    )
    return out.writeStream.outputMode("update")


def dedup(spark, s: Sizes):
    """dropDuplicates on (id, 10-second bucket) with a 10-second watermark on the bucket: about half the
    rows of a bucket repeat an id seen in an earlier batch of the same bucket."""
    from pyspark.sql import functions as F

    df = _rate(spark, s.dedup_rows).select(
        ((F.col("value") * PRIME) % s.dedup_ids).alias("id"),
        F.window("timestamp", "10 seconds").start.alias("bucket"),
    )
    out = df.withWatermark("bucket", "10 seconds").dropDuplicates(["id", "bucket"])
    return out.writeStream.outputMode("append")


def join(spark, s: Sizes):
    """Inner join of impressions and clicks on the ad id, a click within 2 s after its impression,
    2-second watermarks on both sides: each click is for an impression of the previous batch (1 s
    earlier), and each side's state holds its last few batches once the watermark evicts."""
    from pyspark.sql import functions as F

    imp = _rate(spark, s.join_rows).select(F.col("value").alias("imp_ad"), F.col("timestamp").alias("imp_ts"))
    clk = _rate(spark, s.join_rows).select(
        (F.col("value") - s.join_rows).alias("clk_ad"), F.col("timestamp").alias("clk_ts")
    )
    out = imp.withWatermark("imp_ts", "2 seconds").join(
        clk.withWatermark("clk_ts", "2 seconds"),
        F.expr("clk_ad = imp_ad AND clk_ts >= imp_ts AND clk_ts <= imp_ts + interval 2 seconds"),
        "inner",
    )
    return out.writeStream.outputMode("append")


BUILDERS = {"aggregation": aggregation, "dedup": dedup, "join": join}
