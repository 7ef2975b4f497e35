"""Snapshot rounds that reach retention: what removing the older snapshots costs a round.

A durable State of --keys BIGINT keys in 4 partitions, bulk loaded, then --rounds snapshot rounds, each
after a change of keys/100 keys; with `spark.sharedstate.snapshot.retained=1` and `fullEvery=1` every
round after the first removes the previous round's full snapshots (and trims the changelog behind
them). Prints and writes (--out/retention_rounds.json) each round's `retention_ms`, `snapshot_ms` and
whether it removed snapshots. The jar is the package's, or $SHAREDSTATE_JAR (to run two builds side by
side); `--report DIR` tabulates and plots such runs (`DIR/<side>-<n>/`).

    PYTHONPATH=python .venv/bin/python benchmarks/durability/retention_rounds.py --keys 1000000 --out DIR
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path


def report(directory: Path, sides: list[str]) -> str:
    """table.md and plot.png of `<side>-<n>/retention_rounds.json` runs: per side, the rounds that removed
    snapshots (median, min-max of their retention and round times over every run)."""
    rows = ["| side | runs | rounds removing snapshots | retention ms median (min-max) | round s median (min-max) |"]
    rows.append("| --- | ---: | ---: | --- | --- |")
    series = {}
    for side in sides:
        runs = sorted(directory.glob(f"{side}-*/retention_rounds.json"))
        rounds = [r for f in runs for r in json.loads(f.read_text())["rounds"] if r["snapshots_removed"]]
        ms = [r["retention_ms"] for r in rounds]
        secs = [r["round_s"] for r in rounds]
        series[side] = ms
        rows.append(
            f"| {side} | {len(runs)} | {len(rounds)} | {statistics.median(ms):,.0f} ({min(ms):,}-{max(ms):,}) | "
            f"{statistics.median(secs):.2f} ({min(secs):.2f}-{max(secs):.2f}) |"
        )
    table = "\n".join(rows) + "\n"
    (directory / "table.md").write_text(table)
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.boxplot(list(series.values()), tick_labels=list(series))
    ax.set_yscale("log")
    ax.set_ylabel("retention per round (ms, log)")
    ax.set_title("Snapshot rounds that remove older snapshots")
    fig.tight_layout()
    fig.savefig(directory / "plot.png", dpi=100)
    return table


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--keys", type=int, default=1_000_000)
    p.add_argument("--rounds", type=int, default=4)
    p.add_argument("--driver-memory", default="6g")
    p.add_argument("--out", type=Path)
    p.add_argument("--report", type=Path, help="only write table.md and plot.png of the runs in this directory")
    p.add_argument("--sides", default="old,new", help="with --report: the runs' side names (<side>-<n>/)")
    args = p.parse_args(argv)
    if args.report:
        print(report(args.report, args.sides.split(",")))
        return 0
    if args.out is None:
        p.error("--out is required (or --report DIR)")

    from pyspark.sql import functions as F

    import sharedstate as ss

    work = Path(tempfile.mkdtemp(prefix="retention-rounds-"))
    spark = ss.session(
        "retention-rounds",
        master="local[2]",
        **{
            "spark.driver.memory": args.driver_memory,
            "spark.ui.enabled": "false",
            "spark.sharedstate.snapshot.retained": "1",
            "spark.sharedstate.snapshot.fullEvery": "1",
            "spark.sharedstate.snapshot.interval": "0",
            "spark.sharedstate.snapshot.afterUpdates": "0",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    try:
        st = ss.State.create(spark, "kv", key="k BIGINT", value="v BIGINT", partitions=4, root=str(work / "root"))

        def load(n: int, t: int, step: int) -> float:
            df = spark.range(0, n * step, step).select(
                F.col("id").alias("k"),
                F.timestamp_seconds(F.lit(1_700_000_000 + 60 * t)).alias("ts"),
                (F.col("id") + t).alias("v"),
            )
            started = time.perf_counter()
            df.write.format("sharedstate").mode("append").option("state", "kv").option("key", "k").option(
                "time", "ts"
            ).option("value", "v").save()
            return time.perf_counter() - started

        out = {"keys": args.keys, "jar": os.environ.get("SHAREDSTATE_JAR", "package"), "load_s": load(args.keys, 1, 1)}
        rounds = []
        for r in range(args.rounds):
            if r:
                load(args.keys // 100, 1 + r, 100)
            started = time.perf_counter()
            result = st.snapshot()
            result["round_s"] = time.perf_counter() - started
            rounds.append(result)
            print(
                f"round {r}: {result['round_s']:.2f} s, snapshot {result['snapshot_ms']} ms, "
                f"retention {result['retention_ms']} ms, snapshots removed {result['snapshots_removed']}, "
                f"changelog trimmed {result['changelog_trimmed']}",
                flush=True,
            )
        out["rounds"] = rounds
        # Change r writes k + 1 + r to every hundredth key: the last change's value, the load's for the others.
        last = args.rounds - 1
        expected = {0: 1 + last, 100: 101 + last, 7: 8}
        got = {r["k"]: r["v"] for r in st.as_of().where(F.col("k").isin(list(expected))).collect()}
        out["sample_correct"] = got == expected
    finally:
        spark.stop()
        shutil.rmtree(work, ignore_errors=True)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "retention_rounds.json").write_text(json.dumps(out, indent=2))
    print(json.dumps({k: v for k, v in out.items() if k != "rounds"}))
    return 0 if out["sample_correct"] else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
