"""One phase of the snapshot/recovery benchmark, run in its own process (a fresh Spark application),
printing one JSON line. `snapshot_recovery.py` runs the phases in order and collects the lines.

    python phases.py <phase> <work dir> <keys> [partitions] [driver memory]

Phases: stage (input files), ss-load (bulk load, snapshot round, tail), ss-recover (State.get, then
two delta snapshot rounds: the first holds the tail's keys the recovery replayed, the second the keys
of a 1% change loaded after it),
rocks-load / rocks-tail / rocks-recover (the same input through a streaming `max_by` aggregation on
Spark's RocksDB state store with changelog checkpointing).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import time
from pathlib import Path

T0 = 1_700_000_000_000_000  # event time of the load (microseconds)
T1 = T0 + 60_000_000  # event time of the tail (a minute later)
TAIL_FRACTION = 10  # the tail updates keys/10 keys
CHANGE_FRACTION = 100  # after recovery, keys/100 keys change before the delta snapshot round
T2 = T1 + 60_000_000  # event time of that change


def _session(app: str, work: Path, extra: dict):
    import sharedstate as ss

    conf = {
        "spark.driver.memory": extra.pop("_driver_memory"),
        "spark.sql.shuffle.partitions": str(extra.pop("_partitions")),
        "spark.ui.enabled": "false",
        **extra,
    }
    spark = ss.session(app, master="local[2]", **conf)
    # rocks-recover: INFO for RocksDB's load lines (a logger-level INFO on the RocksDB class alone did not show them)
    spark.sparkContext.setLogLevel("INFO" if app.endswith("rocks-recover") else "ERROR")
    return spark


def stage(spark, work: Path, keys: int) -> dict:
    from pyspark.sql import functions as F

    t = time.perf_counter()
    load = spark.range(keys).select(
        F.col("id").alias("k"),
        (F.col("id") * 31 % 1_000_003).alias("v"),
        F.timestamp_micros(F.lit(T0) + F.col("id") % 1000).alias("ts"),
    )
    load.repartition(4).write.parquet(str(work / "input" / "load"))
    n = keys // TAIL_FRACTION
    tail = spark.range(n).select(
        ((F.col("id") * 7919) % keys).alias("k"),
        (F.col("id") + 7).alias("v"),
        F.timestamp_micros(F.lit(T1) + F.col("id") % 1000).alias("ts"),
    )
    tail.repartition(4).write.parquet(str(work / "input" / "tail"))
    change = spark.range(keys // CHANGE_FRACTION).select(
        ((F.col("id") * 104729) % keys).alias("k"),
        (F.col("id") + 11).alias("v"),
        F.timestamp_micros(F.lit(T2) + F.col("id") % 1000).alias("ts"),
    )
    change.repartition(4).write.parquet(str(work / "input" / "change"))
    spark.range(4).select(
        F.col("id").alias("k"), F.col("id").alias("v"), F.timestamp_micros(F.lit(T1 + 10_000_000)).alias("ts")
    ).coalesce(1).write.parquet(str(work / "input" / "probe"))
    return {"stage_s": time.perf_counter() - t, "tail_rows": n}


def _du(path: Path) -> int:
    # A file a store's background thread renames or deletes between the listing and its stat is skipped
    # (no longer part of what is on disk), as the statestore harness's du does.
    total = 0
    for f in path.rglob("*"):
        with contextlib.suppress(FileNotFoundError):
            total += f.stat().st_size if f.is_file() else 0
    return total


def ss_load(spark, work: Path, keys: int, partitions: int) -> dict:
    import sharedstate as ss

    root = work / "ss-root"
    st = ss.State.create(spark, "kv", key="k BIGINT", value="v BIGINT", partitions=partitions, root=str(root))

    def bulk(name: str) -> float:
        df = spark.read.parquet(str(work / "input" / name))
        t = time.perf_counter()
        (
            df.write.format("sharedstate")
            .mode("append")
            .option("state", "kv")
            .option("key", "k")
            .option("time", "ts")
            .option("value", "v")
            .save()
        )
        return time.perf_counter() - t

    out = {"load_s": bulk("load")}
    out["keys_after_load"] = st.progress()["keys"]
    # Rounds taken on change (spark.sharedstate.snapshot.afterUpdates) inside the load, before it returned.
    out["rounds_in_load"] = st.snapshot_rounds()
    t = time.perf_counter()
    out["snapshot_result"] = st.snapshot()
    out["snapshot_s"] = time.perf_counter() - t
    out["tail_s"] = bulk("tail")
    out["keys"] = st.progress()["keys"]
    out["rounds"] = st.snapshot_rounds()
    out["bytes"] = {d.name: _du(d) for d in (root / "kv").iterdir() if d.is_dir()}
    return out


def ss_recover(spark, work: Path, keys: int, partitions: int) -> dict:
    import sharedstate as ss

    t = time.perf_counter()
    st = ss.State.get(spark, "kv")
    out = {"recover_s": time.perf_counter() - t, "keys": st.progress()["keys"]}
    # spot check against the input: the tail's value for a tail key, the load's for the others
    rows = {r["k"]: r["v"] for r in st.as_of().where("k < 20").collect()}
    out["sample"] = {str(k): v for k, v in sorted(rows.items())}
    if os.environ.get("DURABILITY_BENCH_DELTA_ROUNDS", "1") == "0":
        return out  # --no-delta-rounds
    # Delta snapshots (spark.sharedstate.snapshot.fullEvery, default 8): the recovered owner tracks the
    # keys its changelog replay changed, so its first round holds the tail's keys; then a 1% change.
    t = time.perf_counter()
    out["delta_after_tail"] = st.snapshot()
    out["delta_after_tail_s"] = time.perf_counter() - t
    df = spark.read.parquet(str(work / "input" / "change"))
    (
        df.write.format("sharedstate")
        .mode("append")
        .option("state", "kv")
        .option("key", "k")
        .option("time", "ts")
        .option("value", "v")
        .save()
    )
    t = time.perf_counter()
    out["delta_1pct"] = st.snapshot()
    out["delta_1pct_s"] = time.perf_counter() - t
    out["change_rows"] = keys // CHANGE_FRACTION
    return out


# Spark 4.2: RocksDB.commit takes a snapshot when `newVersion - lastSnapshotVersion >=
# conf.minDeltasForSnapshot` (RocksDB.shouldCreateSnapshot), and RocksDBConf takes that number from
# StateStoreConf.minDeltasForSnapshot = SQLConf `spark.sql.streaming.stateStore.minDeltasForSnapshot`
# (default 10; there is no `...stateStore.rocksdb.minDeltasForSnapshot`). With changelog checkpointing
# the commit only flushes and checkpoints RocksDB locally and queues the snapshot; the state store's
# maintenance task (every `maintenanceInterval`, while the query runs and the provider is loaded)
# zips and uploads it as state/<op>/<partition>/<version>.zip (<version>_<id>.zip with checkpoint format 2).
ROCKS = {
    "spark.sql.streaming.stateStore.providerClass": (
        "org.apache.spark.sql.execution.streaming.state.RocksDBStateStoreProvider"
    ),
    "spark.sql.streaming.stateStore.rocksdb.changelogCheckpointing.enabled": "true",
    "spark.sql.streaming.stateStore.maintenanceInterval": "200ms",
}
SNAPSHOT_EVERY = "spark.sql.streaming.stateStore.minDeltasForSnapshot"
UPLOAD_TIMEOUT_S = 300


def _rocks_query(spark, work: Path):
    from pyspark.sql import functions as F
    from pyspark.sql.types import LongType, StructField, StructType, TimestampType

    schema = StructType(
        [StructField("k", LongType()), StructField("v", LongType()), StructField("ts", TimestampType())]
    )
    src = spark.readStream.schema(schema).parquet(str(work / "rocks-src"))
    latest = src.groupBy("k").agg(F.max_by("v", "ts").alias("v"), F.max("ts").alias("ts"))
    return (
        latest.writeStream.format("noop")
        .outputMode("update")
        .queryName("rocks-latest")
        .option("checkpointLocation", str(work / "rocks-ck"))
        .start()
    )


def _batches(q) -> list[dict]:
    return [
        {
            "batchId": p["batchId"],
            "numInputRows": p["numInputRows"],
            "durationMs": p["durationMs"],
            "stateOperators": p["stateOperators"],
        }
        for p in q.recentProgress
        if p["numInputRows"]
    ]


def _state_files(work: Path, version: int, kind: str) -> list[Path]:
    """The snapshot zips (kind "zip") or changelog files of `version`, every partition of the aggregation."""
    root = work / "rocks-ck" / "state" / "0"
    return list(root.glob(f"*/{version}.{kind}")) + list(root.glob(f"*/{version}_*.{kind}"))


def rocks_load(spark, work: Path, keys: int, partitions: int) -> dict:
    """Version 1 of every partition, with a snapshot; times the batch and the snapshot's upload after it."""
    t = time.perf_counter()
    q = _rocks_query(spark, work)
    q.processAllAvailable()
    batch_end = time.perf_counter()
    # The maintenance task uploads the queued snapshot while the query (and so the provider) is alive.
    while len(_state_files(work, 1, "zip")) < partitions and time.perf_counter() - batch_end < UPLOAD_TIMEOUT_S:
        time.sleep(0.02)
    upload_s = time.perf_counter() - batch_end
    zips = _state_files(work, 1, "zip")
    q.stop()
    if len(zips) < partitions:
        raise RuntimeError(
            f"RocksDB uploaded {len(zips)} of {partitions} snapshots of version 1 within "
            f"{UPLOAD_TIMEOUT_S} s (is {SNAPSHOT_EVERY}=1 applied?)"
        )
    # The maintenance task may upload while the batch is still finishing on the driver, so the time
    # after the batch understates it: per partition, the zip's mtime minus its version-1 changelog's
    # (written at the end of that partition's commit, after the snapshot's flush and checkpoint).
    changelogs = {p.parent.name: p.stat().st_mtime for p in _state_files(work, 1, "changelog")}
    lags = [z.stat().st_mtime - changelogs[z.parent.name] for z in zips if z.parent.name in changelogs]
    return {
        "load_s": batch_end - t,
        "snapshot_upload_after_batch_s": upload_s,
        "zips": len(zips),
        "snapshot_upload_after_commit_s": max(lags) if lags else None,
        "snapshot_upload_after_commit_each_s": lags,
        "zip_bytes": sum(z.stat().st_size for z in zips),
        "batches": _batches(q),
        "bytes": _du(work / "rocks-ck" / "state"),
    }


def rocks_next(spark, work: Path, keys: int, partitions: int) -> dict:
    """Restarts the query from its checkpoint and times its first batch (state load + the new files)."""
    t = time.perf_counter()
    q = _rocks_query(spark, work)
    q.processAllAvailable()
    wall = time.perf_counter() - t
    q.stop()
    batches = _batches(q)
    version = batches[0]["batchId"] + 1 if batches else -1  # batch b commits state version b + 1
    return {
        "wall_s": wall,
        "batches": batches,
        "version": version,
        "snapshot_zips": len(_state_files(work, version, "zip")),
        "changelog_files": len(_state_files(work, version, "changelog")),
        "bytes": _du(work / "rocks-ck" / "state"),
    }


def rocks_recover(spark, work: Path, keys: int, partitions: int) -> dict:
    """The first batch after a restart loads each partition from the snapshot of version 1 plus the tail's changelog.

    Spark's rocksdbNumReplayChangelogFiles / rocksdbLoadLatencyMs cannot show it: the aggregation's
    restore and save operators both call RocksDB.load(version), and the second call (a no-op) clears
    the load metrics the first recorded. RocksDB's own INFO lines do ("Loading v", "Replaying changelog
    from version a -> Some(b)", "Loaded v"): this phase logs at INFO and snapshot_recovery.py reads them.
    """
    return rocks_next(spark, work, keys, partitions)


PHASES = {
    "ss-load": ss_load,
    "ss-recover": ss_recover,
    "rocks-load": rocks_load,
    "rocks-tail": rocks_next,
    "rocks-recover": rocks_recover,
}


def main() -> None:
    phase, work, keys = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    partitions = int(sys.argv[4]) if len(sys.argv) > 4 else 4
    extra = {"_partitions": partitions, "_driver_memory": sys.argv[5] if len(sys.argv) > 5 else "6g"}
    if phase.startswith("ss"):
        extra["spark.sharedstate.snapshot.interval"] = "0"
        extra["spark.sharedstate.root"] = str(work / "ss-root")  # State.get in a new application finds it there
    if phase.startswith("rocks"):
        extra.update(ROCKS)
        # a snapshot at the load's commit (version 1); none after it (recovery = snapshot + changelog tail)
        extra[SNAPSHOT_EVERY] = "1" if phase == "rocks-load" else "1000"
    spark = _session(f"durability-{phase}", work, extra)
    try:
        out = stage(spark, work, keys) if phase == "stage" else PHASES[phase](spark, work, keys, partitions)
    finally:
        spark.stop()
    print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
