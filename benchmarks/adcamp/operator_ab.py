"""The fetch join operator alone, one plugin jar against another, in the same run.

    .venv/bin/python benchmarks/adcamp/operator_ab.py --jar old=/tmp/old.jar --jar new=python/sharedstate/jars/<jar> \
        --out benchmarks/results/adcamp/operator-ab

A batch `ss.fetch_join` (latest, read-committed, left) of N AdCamp-shaped views over a bulk-loaded State
(KEYS ads, 10 updates each), written to Spark's `noop` sink, in `local[2]`; beside it, the same views
read and written to `noop` with no join. Each jar runs in its own JVM (a child process), REPS times
after a warm-up. `join - read` (per repetition; the median counts) is what the operator adds: no sink, no
streaming engine, no feeder, so a change to the operator shows here without the noise of the
end-to-end AdCamp run. Writes results.json, table.md and plot.png into --out.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def child(n: int, keys: int, reps: int, events_dir: str) -> dict:
    import numpy as np
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    import sharedstate as ss

    if not Path(events_dir).exists():
        Path(events_dir).mkdir(parents=True)
        rng = np.random.default_rng(1)
        per = 1_000_000
        for i in range(max(1, n // per)):
            views = pd.DataFrame(
                {
                    "event_id": np.arange(i * per, (i + 1) * per, dtype=np.int64),
                    "ad_id": rng.integers(0, keys, size=per, dtype=np.int64),
                    "ts": pd.to_datetime(rng.integers(10**12, 2 * 10**12, size=per), unit="us", utc=True),
                    "clicked": rng.integers(0, 2, size=per).astype(bool),
                }
            )
            pq.write_table(
                pa.Table.from_pandas(views, preserve_index=False),
                f"{events_dir}/part-{i}.parquet",
                coerce_timestamps="us",
                allow_truncated_timestamps=True,
            )
    spark = ss.session("operator-ab", master="local[2]", **{"spark.driver.memory": "6g"})
    spark.sparkContext.setLogLevel("ERROR")
    name = f"ab_{os.getpid()}"
    state = ss.State.create(spark, name, key="ad_id BIGINT", value="campaign INT")
    rng = np.random.default_rng(2)
    u = keys * 10
    updates = pd.DataFrame(
        {
            "ad_id": rng.integers(0, keys, size=u, dtype=np.int64),
            "ts": pd.to_datetime(rng.choice(2 * 10**12, size=u, replace=False), unit="us", utc=True),
            "campaign": rng.integers(0, 1000, size=u).astype(np.int32),
        }
    )
    (
        spark.createDataFrame(updates)
        .write.format("sharedstate")
        .option("state", name)
        .option("key", "ad_id")
        .option("time", "ts")
        .mode("append")
        .save()
    )
    views = spark.read.parquet(events_dir)
    reads, joins = [], []
    for _ in range(reps + 1):  # the first is a warm-up
        t0 = time.time()
        views.write.format("noop").mode("overwrite").save()
        reads.append(time.time() - t0)
        t0 = time.time()
        ss.fetch_join(views, state, key="ad_id", time="ts").write.format("noop").mode("overwrite").save()
        joins.append(time.time() - t0)
    rows = views.count()
    spark.stop()
    return {"rows": rows, "read_s": reads[1:], "join_s": joins[1:]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jar", action="append", required=True, help="label=path of a plugin assembly jar (repeat)")
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--rows", type=int, default=8_000_000)
    p.add_argument("--keys", type=int, default=10_000)
    p.add_argument("--reps", type=int, default=4)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args()
    events_dir = f"/tmp/operator-ab-views-{args.rows}-{args.keys}"
    if args.child:
        print("RESULT " + json.dumps(child(args.rows, args.keys, args.reps, events_dir)))
        return 0
    results = {}
    for label, jar in (j.split("=", 1) for j in args.jar):
        run = subprocess.run(
            [
                sys.executable,
                __file__,
                "--child",
                "--jar",
                args.jar[0],
                "--out",
                str(args.out),
                "--rows",
                str(args.rows),
                "--keys",
                str(args.keys),
                "--reps",
                str(args.reps),
            ],
            env={**os.environ, "SHAREDSTATE_JAR": str(Path(jar).resolve())},
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(next(line for line in run.stdout.splitlines() if line.startswith("RESULT "))[7:])
        r["best_read_s"], r["best_join_s"] = min(r["read_s"]), min(r["join_s"])
        # per repetition, join minus the read beside it; the median is what the table and plot show
        r["operator_s"] = statistics.median(j - rd for j, rd in zip(r["join_s"], r["read_s"]))
        r["operator_best_s"] = min(j - rd for j, rd in zip(r["join_s"], r["read_s"]))
        r["operator_ns_per_row_core"] = 2 * 1e9 * r["operator_s"] / r["rows"]  # local[2]: two cores busy
        results[label] = r
        print(label, json.dumps({k: round(v, 3) for k, v in r.items() if isinstance(v, float)}), flush=True)
    args.out.mkdir(parents=True, exist_ok=True)
    command = " ".join([".venv/bin/python", "benchmarks/adcamp/operator_ab.py"] + sys.argv[1:])
    (args.out / "results.json").write_text(json.dumps({"command": command, "results": results}, indent=1))
    lines = [
        "| jar | best read (s) | best join (s) | join - read, median (best) (s) "
        "| operator ns per row per core (median) |",
        "| --- | --- | --- | --- | --- |",
    ]
    lines += [
        f"| {k} | {r['best_read_s']:.2f} | {r['best_join_s']:.2f} "
        f"| {r['operator_s']:.2f} ({r['operator_best_s']:.2f}) | "
        f"{r['operator_ns_per_row_core']:.0f} |"
        for k, r in results.items()
    ]
    (args.out / "table.md").write_text(f"`{command}`\n\n" + "\n".join(lines) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    labels = list(results)
    ax.bar(labels, [results[k]["best_read_s"] for k in labels], label="read views (no join), best")
    ax.bar(
        labels,
        [results[k]["operator_s"] for k in labels],
        bottom=[results[k]["best_read_s"] for k in labels],
        label="fetch join operator, median",
    )
    ax.set_ylabel(f"seconds for {args.rows:,} views ({args.reps} runs)")
    ax.set_title("Batch fetch join to noop, local[2]")
    ax.legend()
    fig.tight_layout()
    fig.savefig(args.out / "plot.png", dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
