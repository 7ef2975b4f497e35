"""Soak: a writer and two fetch joins at a fixed rate with default settings, for a long time.

Every `sample_s` seconds the harness samples the driver JVM's heap (after a GC hint) and the State's
bytes, pairs and compacted pairs. Input arrives as one parquet file of updates and one of events per
second (the same files are the oracle's input); each fetch join writes its answers to parquet.
At the end every event must have been answered exactly once by each join, equal to the offline
as-of join (zero rows lost), and memory must be flat after warm-up: the last `flat_window_s` seconds
of State bytes and heap within `tolerance` of the first plateau (the window after warm-up).

    python benchmarks/soak/soak.py --minutes 30 --out benchmarks/results/soak
"""

from __future__ import annotations

import argparse
import json
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

import sharedstate as ss
from sharedstate.testing.adcamp import EVENT_SCHEMA, UPDATE_SCHEMA, to_spark_parquet, utc
from sharedstate.testing.streams import check_running, drained

KEYS = 2_000


@dataclass
class Sample:
    seconds: float
    heap_bytes: int
    state_bytes: int
    pairs: int
    pairs_compacted: int
    update: str | None
    fetch: str | None


@dataclass
class SoakResult:
    minutes: float
    rate: int
    samples: list[Sample] = field(default_factory=list)
    events: int = 0
    answered: dict[str, int] = field(default_factory=dict)
    mismatched: dict[str, int] = field(default_factory=dict)
    plateau: dict[str, float] = field(default_factory=dict)
    last_window: dict[str, float] = field(default_factory=dict)
    flat: bool = False
    lost: int = 0


class Feeder(threading.Thread):
    """Writes one file of `rate` updates and one of `rate` events per second, times near the wall clock."""

    def __init__(self, root: Path, rate: int, seconds: int, seed: int = 7):
        super().__init__(daemon=True)
        self.root, self.rate, self.seconds = root, rate, seconds
        self.rng = np.random.default_rng(seed)
        self.failed: BaseException | None = None
        (root / "updates").mkdir(parents=True, exist_ok=True)
        (root / "events").mkdir(parents=True, exist_ok=True)

    def run(self) -> None:
        try:
            start = time.time()
            for i in range(self.seconds):
                now_us = int(time.time() * 1_000_000)
                offsets = np.sort(self.rng.integers(0, 1_000_000, size=self.rate))
                updates = pd.DataFrame(
                    {
                        "ad_id": [f"ad{k}" for k in self.rng.integers(0, KEYS, size=self.rate)],
                        "ts": pd.to_datetime(now_us - 2_000_000 + offsets, unit="us", utc=True),
                        "campaign": [f"c{i}-{j}" for j in range(self.rate)],
                    }
                )
                events = pd.DataFrame(
                    {
                        "event_id": np.arange(i * self.rate, (i + 1) * self.rate, dtype="int64"),
                        "user_id": ["u"] * self.rate,
                        "ad_id": [f"ad{k}" for k in self.rng.integers(0, KEYS, size=self.rate)],
                        "ts": pd.to_datetime(now_us - 3_000_000 + offsets, unit="us", utc=True),
                        "clicked": [False] * self.rate,
                    }
                )
                to_spark_parquet(updates, self.root / "updates" / f"part-{i:06d}.parquet")
                to_spark_parquet(events, self.root / "events" / f"part-{i:06d}.parquet")
                time.sleep(max(0.0, start + i + 1 - time.time()))
        except BaseException as e:  # reported by the harness
            self.failed = e


def _heap(spark) -> int:
    runtime = spark.sparkContext._jvm.java.lang.Runtime.getRuntime()
    spark.sparkContext._jvm.java.lang.System.gc()
    return int(runtime.totalMemory() - runtime.freeMemory())


def run(
    out: Path,
    minutes: float,
    rate: int,
    sample_s: float = 10.0,
    warmup_s: float | None = None,
    flat_window_s: float | None = None,
    tolerance: float = 0.10,
    spark=None,
) -> SoakResult:
    out.mkdir(parents=True, exist_ok=True)
    work = out / "work"
    seconds = int(minutes * 60)
    warmup_s = seconds / 6 if warmup_s is None else warmup_s
    flat_window_s = seconds / 3 if flat_window_s is None else flat_window_s
    own_session = spark is None
    spark = spark or ss.session("sharedstate-soak", master="local[4]")
    name = f"soak{int(time.time())}"
    state = ss.State.create(spark, name, key="ad_id STRING", value="campaign STRING", partitions=4)  # defaults
    feeder = Feeder(work, rate, seconds)
    feeder.start()
    writer = (
        spark.readStream.schema(UPDATE_SCHEMA)
        .parquet(str(work / "updates"))
        .writeStream.format("sharedstate")
        .option("state", name)
        .option("key", "ad_id")
        .option("time", "ts")
        .option("lateness", "5 seconds")
        .option("checkpointLocation", str(work / "ck-updates"))
        .trigger(processingTime="1 second")
        .start()
    )
    joins = {}
    for j in ("join_a", "join_b"):
        events = spark.readStream.schema(EVENT_SCHEMA).parquet(str(work / "events")).withWatermark("ts", "30 seconds")
        joins[j] = (
            ss.fetch_join(events, name, key="ad_id", time="ts")
            .writeStream.format("parquet")
            .option("path", str(work / j))
            .option("checkpointLocation", str(work / f"ck-{j}"))
            .trigger(processingTime="1 second")
            .start()
        )
    result = SoakResult(minutes=minutes, rate=rate)
    started = time.time()
    while feeder.is_alive():
        check_running(writer, *joins.values())
        p = state.progress()
        result.samples.append(
            Sample(
                round(time.time() - started, 1),
                _heap(spark),
                p["bytes"],
                p["pairs"],
                p["pairs_compacted"],
                str(p["update"]),
                str(p["fetch"]),
            )
        )
        time.sleep(sample_s)
    if feeder.failed is not None:
        raise feeder.failed
    for q in (writer, *joins.values()):
        drained(q, timeout=600)
    # the last events wait for U: one more update file moves U past them
    late = pd.DataFrame(
        {"ad_id": ["ad0"], "ts": [pd.Timestamp.now(tz="UTC") + pd.Timedelta(seconds=60)], "campaign": ["end"]}
    )
    to_spark_parquet(late, work / "updates" / "part-999999.parquet")
    drained(writer, timeout=600)
    for q in joins.values():
        drained(q, timeout=600)
        drained(q, timeout=600)
    for q in (writer, *joins.values()):
        q.stop()

    updates = pd.read_parquet(work / "updates").sort_values("ts")
    events = pd.read_parquet(work / "events").sort_values("ts")
    updates["ts"], events["ts"] = utc(updates["ts"]), utc(events["ts"])
    expected = pd.merge_asof(
        events,
        updates.rename(columns={"ts": "value_time"}),
        left_on="ts",
        right_on="value_time",
        by="ad_id",
        direction="backward",
        allow_exact_matches=True,
    )
    expected = expected.set_index("event_id")["campaign"]
    result.events = len(expected)
    for j in joins:
        got = pd.read_parquet(work / j)
        result.answered[j] = int(got["event_id"].nunique())
        dup = int(got["event_id"].duplicated().sum())
        got = got.drop_duplicates("event_id").set_index("event_id")["campaign"]
        both = expected.index.intersection(got.index)
        wrong = int((expected.loc[both].fillna("<none>") != got.loc[both].fillna("<none>")).sum())
        result.mismatched[j] = wrong + dup
        result.lost += len(expected) - len(both)
    _judge(result, warmup_s, flat_window_s, tolerance)
    (out / "result.json").write_text(json.dumps(asdict(result), indent=1))
    if own_session:
        spark.stop()
    return result


def _judge(result: SoakResult, warmup_s: float, flat_window_s: float, tolerance: float) -> None:
    s = pd.DataFrame([asdict(x) for x in result.samples])
    end = s["seconds"].max()
    plateau = s[(s["seconds"] >= warmup_s) & (s["seconds"] < warmup_s + flat_window_s)]
    last = s[s["seconds"] > end - flat_window_s]
    for col in ("state_bytes", "heap_bytes"):
        result.plateau[col] = float(plateau[col].median()) if len(plateau) else float("nan")
        result.last_window[col] = float(last[col].median()) if len(last) else float("nan")
    p, q = result.plateau["state_bytes"], result.last_window["state_bytes"]
    result.flat = bool(p > 0 and q <= p * (1 + tolerance))


def plot(result_json: Path, png: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    r = json.loads(result_json.read_text())
    s = pd.DataFrame(r["samples"])
    fig, ax = plt.subplots(figsize=(9, 4.5))
    ax.plot(s["seconds"] / 60, s["heap_bytes"] / 2**20, color="tab:blue", label="driver heap after a GC hint (MiB)")
    ax.set_xlabel("minutes")
    ax.set_ylabel("driver heap (MiB)")
    state_ax = ax.twinx()  # the State is far smaller than the heap: its own axis
    state_ax.plot(s["seconds"] / 60, s["state_bytes"] / 2**10, color="tab:orange", label="State bytes (KiB)")
    state_ax.set_ylabel("State bytes (KiB)")
    state_ax.set_ylim(bottom=0)
    ax.set_title(f"soak: writer + 2 fetch joins, {r['rate']} updates/s and events/s, default settings")
    lines = ax.get_lines() + state_ax.get_lines()
    ax.legend(lines, [line.get_label() for line in lines], loc="upper left")
    fig.tight_layout()
    fig.savefig(png, dpi=100)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--minutes", type=float, default=30)
    parser.add_argument("--rate", type=int, default=200, help="updates and events per second")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results/soak"))
    args = parser.parse_args()
    result = run(args.out, args.minutes, args.rate)
    plot(args.out / "result.json", args.out / "memory.png")
    table = [
        "| events | answered (a / b) | mismatched | lost | State bytes: plateau -> last "
        "| heap: plateau -> last | flat |",
        "| --- | --- | --- | --- | --- | --- | --- |",
        f"| {result.events} | {result.answered.get('join_a')} / {result.answered.get('join_b')} | "
        f"{sum(result.mismatched.values())} | {result.lost} | "
        f"{result.plateau['state_bytes']:.0f} -> {result.last_window['state_bytes']:.0f} | "
        f"{result.plateau['heap_bytes']:.0f} -> {result.last_window['heap_bytes']:.0f} | {result.flat} |",
    ]
    cmd = f"python benchmarks/soak/soak.py --minutes {args.minutes} --rate {args.rate} --out {args.out}"
    (args.out / "table.md").write_text(f"Command: `{cmd}`\n\n" + "\n".join(table) + "\n")
    print("\n".join(table))


if __name__ == "__main__":
    main()
