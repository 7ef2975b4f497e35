"""Spark's own streaming aggregation with its state in SharedStateStoreProvider: the result equals a
pandas computation over the input, after a restart too (the state reloads from the store's files)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from pyspark.sql import SparkSession

from sharedstate.session import STATE_STORE_PROVIDER, STATE_STORE_PROVIDER_KEY, configure

HDFS_PROVIDER = "org.apache.spark.sql.execution.streaming.state.HDFSBackedStateStoreProvider"


def test_state_store_option_sets_the_provider_class():
    assert configure(SparkSession.builder, state_store=True)._options[STATE_STORE_PROVIDER_KEY] == STATE_STORE_PROVIDER
    assert STATE_STORE_PROVIDER_KEY not in configure(SparkSession.builder)._options


def _write_batch(directory, i, rng):
    frame = pd.DataFrame({"k": rng.integers(0, 50, 400).astype("int64"), "v": rng.integers(-100, 100, 400)})
    frame.to_parquet(directory / f"part-{i:03d}.parquet", index=False)
    return frame


def _run(spark, source, checkpoint, table):
    counts = (
        spark.readStream.schema("k BIGINT, v BIGINT")
        .option("maxFilesPerTrigger", 1)
        .parquet(str(source))
        .groupBy("k")
        .agg({"v": "sum", "*": "count"})
        .withColumnRenamed("sum(v)", "total")
        .withColumnRenamed("count(1)", "n")
    )
    query = (
        counts.writeStream.format("memory")
        .queryName(table)
        .outputMode("complete")
        .option("checkpointLocation", str(checkpoint))
        .start()
    )
    query.processAllAvailable()
    query.stop()
    return spark.table(table).toPandas().sort_values("k").reset_index(drop=True)


def _oracle(frames):
    every = pd.concat(frames)
    grouped = every.groupby("k").agg(total=("v", "sum"), n=("v", "size")).reset_index()
    return grouped.sort_values("k").reset_index(drop=True)


def test_streaming_aggregation_matches_pandas_and_recovers_from_the_store_files(spark, workdir):
    rng = np.random.default_rng(22)
    source, checkpoint = workdir / "in", workdir / "checkpoint"
    source.mkdir()
    frames = [_write_batch(source, i, rng) for i in range(4)]
    previous = spark.conf.get(STATE_STORE_PROVIDER_KEY)
    spark.conf.set(STATE_STORE_PROVIDER_KEY, STATE_STORE_PROVIDER)
    try:
        first = _run(spark, source, checkpoint, "statestore_agg_1")
        pd.testing.assert_frame_equal(first[["k", "total", "n"]], _oracle(frames), check_dtype=False)
        # One changelog per committed version of each partition's store: the provider really ran.
        assert sorted(p.name for p in (checkpoint / "state" / "0" / "0").glob("*.changelog"))[:2] == [
            "1.changelog",
            "2.changelog",
        ]
        # A new query run (new provider instances) rebuilds the state from the files and goes on.
        frames += [_write_batch(source, i, rng) for i in range(4, 7)]
        spark.conf.set(STATE_STORE_PROVIDER_KEY, HDFS_PROVIDER)
        second = _run(spark, source, checkpoint, "statestore_agg_2")  # the checkpoint's provider wins
        pd.testing.assert_frame_equal(second[["k", "total", "n"]], _oracle(frames), check_dtype=False)
        assert (checkpoint / "state" / "0" / "0" / "7.changelog").exists()
    finally:
        spark.conf.set(STATE_STORE_PROVIDER_KEY, previous)
