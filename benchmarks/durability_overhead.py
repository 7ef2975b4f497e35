"""Durability on vs off, side by side in one application: the same update stream into an in-memory
State and into a durable one (Delta changelog under a root), then a snapshot round and the recovery
of the durable State in a fresh application (from the changelog only, then from snapshot + changelog).

    .venv/bin/python benchmarks/durability_overhead.py --batches 20 --rows 5000 --out benchmarks/results/durability

A first, small measurement (a 2-core VM shared with other builds): read it as rough.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

import sharedstate as ss
from sharedstate.testing.adcamp import UPDATE_SCHEMA, write_batches

RECOVER = """
import sys, time, sharedstate as ss
spark = ss.session("recover", master="local[2]", **{"spark.sharedstate.root": sys.argv[1],
                   "spark.sharedstate.snapshot.interval": "0"})
t0 = time.perf_counter(); st = ss.State.get(spark, sys.argv[2]); t1 = time.perf_counter()
print(t1 - t0, st.progress()["keys"]); spark.stop()
"""


def stream(spark, name: str, src: Path, ck: Path) -> float:
    q = (
        spark.readStream.schema(UPDATE_SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .parquet(str(src))
        .writeStream.format("sharedstate")
        .option("state", name)
        .option("key", "ad_id")
        .option("time", "ts")
        .option("lateness", "10 seconds")
        .option("checkpointLocation", str(ck))
        .start()
    )
    t0 = time.perf_counter()
    q.processAllAvailable()
    elapsed = time.perf_counter() - t0
    q.stop()
    return elapsed


def recover(root: Path, name: str) -> tuple[float, int]:
    out = subprocess.run([sys.executable, "-c", RECOVER, str(root), name], check=True, capture_output=True, text=True)
    seconds, keys = out.stdout.split()[-2:]
    return float(seconds), int(keys)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--batches", type=int, default=20)
    ap.add_argument("--rows", type=int, default=5000)
    ap.add_argument("--keys", type=int, default=50_000)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results/durability"))
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="durability-bench-"))
    rng = np.random.default_rng(1)
    frames = []
    for b in range(args.batches):
        base = b * 1_000_000
        frames.append(
            pd.DataFrame(
                {
                    "ad_id": [f"ad{k}" for k in rng.integers(0, args.keys, size=args.rows)],
                    "ts": pd.to_datetime(base + rng.integers(0, 1_000_000, size=args.rows), unit="us", utc=True),
                    "campaign": [f"c{c}" for c in rng.integers(0, 100, size=args.rows)],
                }
            )
        )
    write_batches(work / "updates", frames)
    spark = ss.session("durability-bench", master="local[2]", **{"spark.sharedstate.snapshot.interval": "0"})
    try:
        ss.State.create(spark, "warmup", key="ad_id STRING", value="campaign STRING", partitions=4)
        stream(spark, "warmup", work / "updates", work / "ck-warmup")
        ss.State.create(spark, "mem", key="ad_id STRING", value="campaign STRING", partitions=4)
        ss.State.create(
            spark, "durable", key="ad_id STRING", value="campaign STRING", partitions=4, root=str(work / "root")
        )
        memory_s = stream(spark, "mem", work / "updates", work / "ck-mem")
        durable_s = stream(spark, "durable", work / "updates", work / "ck-durable")
        recover_log_s, keys = recover(work / "root", "durable")
        t0 = time.perf_counter()
        ss.State.get(spark, "durable").snapshot()
        snapshot_s = time.perf_counter() - t0
        recover_snap_s, keys2 = recover(work / "root", "durable")
    finally:
        spark.stop()
    updates = args.batches * args.rows
    result = {
        "updates": updates,
        "batches": args.batches,
        "keys": keys,
        "partitions": 4,
        "master": "local[2]",
        "stream_seconds": {"in_memory": memory_s, "durable": durable_s},
        "updates_per_second": {"in_memory": updates / memory_s, "durable": updates / durable_s},
        "snapshot_round_seconds": snapshot_s,
        "recovery_seconds": {"changelog_only": recover_log_s, "snapshot_plus_changelog": recover_snap_s},
        "recovered_keys_match": keys == keys2,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "overhead.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
