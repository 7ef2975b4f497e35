"""Streaming writes into a State in continuous mode: every row below U is applied exactly once.

The oracle is the rate source's own arithmetic: in continuous mode partition p of P emits the values
p, p + P, p + 2P, ... with increasing timestamps, so the updates of each partition that are final
(time below U) must be a gap-free, duplicate-free prefix of that sequence, applied or listed as late.
"""

from __future__ import annotations

import pandas as pd
from pyspark.sql import functions as F

import sharedstate as ss
from sharedstate.testing.oracles import rate_prefix_gaps
from sharedstate.testing.streams import wait_until

PARTITIONS = 2
KEYS = 4  # a multiple of PARTITIONS: rows of different partitions never share a (key, time)


def test_continuous_write_applies_each_final_update_exactly_once(spark, workdir, state_name):
    state = ss.State.create(spark, state_name, key="k BIGINT", value="v BIGINT", partitions=2)
    rows = (
        spark.readStream.format("rate")
        .option("rowsPerSecond", 40)
        .option("numPartitions", PARTITIONS)
        .load()
        .select((F.col("value") % KEYS).alias("k"), F.col("timestamp").alias("ts"), F.col("value").alias("v"))
    )
    query = (
        rows.writeStream.format("sharedstate")
        .option("state", state_name)
        .option("key", "k")
        .option("time", "ts")
        .option("value", "v")
        .option("lateness", "1 second")
        .option("checkpointLocation", str(workdir / "ck"))
        .trigger(continuous="300 milliseconds")
        .start()
    )

    def enough() -> bool:
        if query.exception() is not None:
            raise AssertionError(f"continuous query failed: {query.exception()}")
        return state.progress()["updates_applied"] >= 150

    wait_until(enough, timeout=120, what="150 applied updates")
    query.stop()
    progress = state.progress()
    u = progress["update"]
    assert u is not None

    # Every pair the State holds below U, read back by a batch range fetch just below U.
    probe = spark.createDataFrame(
        [(k, u - pd.Timedelta(microseconds=1)) for k in range(KEYS)], "k BIGINT, ts TIMESTAMP"
    )
    pairs = ss.fetch_join(probe, state_name, key="k", time="ts", rule="range", window="1 day").collect()
    held = [(row.k, p[f"{state_name}_time"], p.v) for row in pairs for p in row[f"{state_name}_range"]]
    late = state.late_updates().toPandas()
    values = [v for _, _, v in held]
    late_values = [int(r["v"]) for r in late["value"]] if len(late) else []
    everything = sorted(values + late_values)
    assert len(everything) == len(set(everything)), "an update was applied twice"
    assert all(v % KEYS == k for k, _, v in held), "a value landed under the wrong key"
    assert not rate_prefix_gaps(everything, PARTITIONS), "a rate-source partition has a gap"
    for p in range(PARTITIONS):
        times = sorted((v, t) for _, t, v in held if v % PARTITIONS == p)
        assert all(a[1] < b[1] for a, b in zip(times, times[1:])), "timestamps follow the rate source's order"
    assert progress["updates_applied"] == len(values)
    assert len(values) >= 150
