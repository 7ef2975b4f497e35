"""Issue 22, Shared: a streaming window aggregation whose state (the shared state store) is published
into a State, and a second query fetch-joining each view with its campaign's totals as of the view's
time; every output row and the State's as-of answers against a pandas oracle over the same
randomised, out-of-order input. Also a kill -9 of the driver mid-stream and a restart from the same
checkpoints and durable root.

This file is the test and the application it runs (a subprocess: publishing is set when the
application starts, and a Python process has one SparkContext):

    python test_statestore_shared.py WORKDIR MASTER CONF_JSON

reads WORKDIR/events and WORKDIR/views, publishes into State "totals" (durable when CONF_JSON sets
spark.sharedstate.root), writes the aggregation's output per batch to WORKDIR/totals, the fetch-join
output to WORKDIR/out and, once it holds every view, WORKDIR/joined.parquet and WORKDIR/final.json
(the State's as-of answers at the probes, U, the rows Spark dropped as late).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from sharedstate.testing.adcamp import to_spark_parquet
from sharedstate.testing.streams import wait_for_rows

STATE = "totals"
QUERY = "campaign_totals"
WINDOW_S = 10
DELAY_S = 30
PROVIDER = "io.sharedstate.spark.statestore.SharedStateStoreProvider"
EVENT_SCHEMA = "campaign STRING, ts TIMESTAMP"
VIEW_SCHEMA = "view_id BIGINT, campaign STRING, ts TIMESTAMP"
APP = Path(__file__).resolve()
PROBES_S = [0, 9, 10, 55, 123, 300, 599, 615]


# ---------------------------------------------------------------- workload and oracle


def workload(seed: int, events: int = 800, views: int = 300, batches: int = 16):
    """Events out of order by at most 16 s (less than the watermark delay, so Spark drops none: the
    oracle is the whole input), in `batches` files in arrival order, then a flush event far ahead
    that moves the watermark past every view; views at random times over the same span."""
    rng = np.random.default_rng(seed)
    campaigns = [f"c{i}" for i in range(5)]
    base = np.sort(rng.uniform(5_000, 600_000, events))
    ms = np.clip(base + rng.uniform(-8_000, 8_000, events), 1_000, None).astype(np.int64)
    ev = pd.DataFrame({"campaign": rng.choice(campaigns, events), "ms": ms})
    files = []
    for chunk in np.array_split(np.arange(events), batches):
        part = ev.iloc[chunk].sample(frac=1.0, random_state=int(rng.integers(1 << 30)))
        files.append(part)
    files.append(pd.DataFrame({"campaign": ["zz_flush"], "ms": [2_000_000]}))
    vw = pd.DataFrame(
        {
            "view_id": np.arange(views, dtype=np.int64),
            "campaign": rng.choice(campaigns + ["c_none"], views),
            "ms": rng.integers(0, 640_000, views),
        }
    )
    return ev, files, vw


def ts(ms) -> pd.Series:
    return pd.to_datetime(ms, unit="ms")


def window_totals(ev: pd.DataFrame) -> pd.DataFrame:
    """Per campaign and tumbling window, the count, stamped at the window end (ms)."""
    end = (ev["ms"] // (WINDOW_S * 1000)) * (WINDOW_S * 1000) + WINDOW_S * 1000
    return ev.assign(end=end).groupby(["campaign", "end"]).size().rename("count").reset_index()


def as_of(totals: pd.DataFrame, campaign: str, t_ms: int):
    """The newest window of `campaign` ended at or before t: (count, end ms), or None."""
    rows = totals[(totals["campaign"] == campaign) & (totals["end"] <= t_ms)]
    if rows.empty:
        return None
    last = rows.loc[rows["end"].idxmax()]
    return int(last["count"]), int(last["end"])


def expected_join(ev: pd.DataFrame, vw: pd.DataFrame) -> pd.DataFrame:
    totals = window_totals(ev)
    out = []
    for v in vw.itertuples():
        hit = as_of(totals, v.campaign, v.ms)
        out.append((v.view_id, None if hit is None else hit[0], None if hit is None else hit[1]))
    return pd.DataFrame(out, columns=["view_id", "count", "end"]).sort_values("view_id").reset_index(drop=True)


def expected_as_of(ev: pd.DataFrame, t_ms: int) -> list[list]:
    totals = window_totals(ev)
    got = [[c, *as_of(totals, c, t_ms)] for c in sorted(totals["campaign"].unique()) if as_of(totals, c, t_ms)]
    return [[c, n, e] for c, n, e in got]


def write_inputs(workdir: Path, files: list[pd.DataFrame], vw: pd.DataFrame) -> None:
    base = time.time() - 10_000
    for name, frames in (("events", files), ("views", [vw])):
        (workdir / name).mkdir(parents=True, exist_ok=True)
        for i, frame in enumerate(frames):
            path = workdir / name / f"part-{i:05d}.parquet"
            to_spark_parquet(frame.assign(ts=ts(frame["ms"])).drop(columns="ms"), path)
            os.utime(path, (base + i, base + i))


def joined_frame(workdir: Path) -> pd.DataFrame:
    got = pd.read_parquet(workdir / "joined.parquet")
    end = pd.to_datetime(got[f"{STATE}_time"], utc=True) - pd.Timestamp(0, tz="UTC")
    got = pd.DataFrame(
        {
            "view_id": got["view_id"].astype("int64"),
            "count": got["count"].astype("Int64"),
            "end": (end / pd.Timedelta(milliseconds=1)).round().astype("Int64"),
        }
    )
    return got.sort_values("view_id").reset_index(drop=True)


def check_totals(workdir: Path, ev: pd.DataFrame) -> None:
    """The provider's own state, as the aggregation emitted it: the last count of each window (update
    mode emits a window whenever its count changes) equals the oracle's total, for every window."""
    parts = [
        pd.read_parquet(d).assign(batch=int(d.name.split("=")[1]))
        for d in (workdir / "totals").glob("batch=*")
        if any(d.glob("*.parquet"))
    ]
    out = pd.concat(parts).sort_values("batch")
    last = out[out["campaign"] != "zz_flush"].groupby(["campaign", "end"])["count"].last().reset_index()
    expected = window_totals(ev).sort_values(["campaign", "end"]).reset_index(drop=True)
    pd.testing.assert_frame_equal(last, expected, check_dtype=False)


def check(workdir: Path, ev: pd.DataFrame, vw: pd.DataFrame) -> dict:
    final = json.loads((workdir / "final.json").read_text())
    check_totals(workdir, ev)
    got = joined_frame(workdir)
    assert got["view_id"].is_unique, "a view was emitted twice"
    expected = expected_join(ev, vw)
    expected = expected.astype({"count": "Int64", "end": "Int64"})
    pd.testing.assert_frame_equal(got, expected, check_dtype=False)
    assert got["count"].notna().sum() > len(got) // 2, "the oracle is not exercised: too few views answered"
    for s in PROBES_S:
        assert final["as_of"][str(s)] == expected_as_of(ev, s * 1000), f"as of {s}s"
    assert final["dropped_late"] == 0
    # the change stream: every window's final total once, at its end (the flush window's is not final)
    u_ms = pd.Timestamp(final["update"]).value // 1_000_000
    totals = window_totals(ev)
    assert final["changes"] == sorted([c, int(n), int(e)] for c, e, n in totals.itertuples(index=False) if e < u_ms)
    # sharedstate_fetch over the views as a batch: the fetch join's answers
    assert final["sql"] == [
        [int(r.view_id), None if pd.isna(r.count) else int(r.count), None if pd.isna(r.end) else int(r.end)]
        for r in expected.itertuples()
    ]
    # U follows the committed watermark: past every view, behind the flush event by the delay
    assert pd.Timestamp(final["update"]) >= pd.Timestamp(2_000 - DELAY_S - WINDOW_S, unit="s", tz="UTC")
    return final


# ---------------------------------------------------------------- the application


def app(workdir: Path, master: str, conf: dict) -> None:
    from pyspark.sql import functions as F

    import sharedstate as ss

    spark = ss.session(
        "statestore-shared",
        master=master,
        **{
            "spark.sql.shuffle.partitions": "3",
            "spark.sql.streaming.stateStore.providerClass": PROVIDER,
            "spark.sharedstate.statestore.publish": "true",
            f"spark.sharedstate.statestore.publish.{QUERY}": STATE,
            "spark.sql.streaming.numRecentProgressUpdates": "2000",
            **conf,
        },
    )
    views_n = len(pd.read_parquet(workdir / "views"))
    state = ss.State.create(spark, STATE, key="campaign STRING", value="count BIGINT", partitions=4)

    events = spark.readStream.schema(EVENT_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(workdir / "events"))
    totals = (
        events.withWatermark("ts", f"{DELAY_S} seconds")
        .groupBy(F.window("ts", f"{WINDOW_S} seconds"), "campaign")
        .count()
    )

    def write_totals(batch, batch_id: int) -> None:
        # The aggregation's output (each batch's updated windows), kept per batch: a re-run batch
        # overwrites its own directory; check_totals compares the last count of each window.
        rows = batch.select("campaign", F.unix_millis(F.col("window.end")).alias("end"), "count")
        rows.write.mode("overwrite").parquet(str(workdir / "totals" / f"batch={batch_id}"))

    aggregation = (
        totals.writeStream.foreachBatch(write_totals)
        .outputMode("update")
        .queryName(QUERY)
        .option("checkpointLocation", str(workdir / "ck-totals"))
        .trigger(processingTime="300 milliseconds")
        .start()
    )
    views = spark.readStream.schema(VIEW_SCHEMA).parquet(str(workdir / "views"))
    joined = ss.fetch_join(views, STATE, key="campaign", time="ts", how="left")
    join = (
        joined.writeStream.format("parquet")
        .option("path", str(workdir / "out"))
        .option("checkpointLocation", str(workdir / "ck-views"))
        .trigger(processingTime="300 milliseconds")
        .start()
    )

    wait_for_rows(spark, workdir / "out", views_n, aggregation, join, timeout=600)
    dropped = sum(
        op.get("numRowsDroppedByWatermark", 0) for p in aggregation.recentProgress for op in p.get("stateOperators", [])
    )
    spark.read.parquet(str(workdir / "out")).toPandas().to_parquet(workdir / "joined.parquet")

    def probe(s: int) -> list[list]:
        t = pd.Timestamp(s, unit="s").strftime("%Y-%m-%d %H:%M:%S")
        rows = state.as_of(t).select("campaign", "count", F.unix_millis(f"{STATE}_time").alias("end")).collect()
        return sorted([r.campaign, r["count"], r.end] for r in rows)

    # The published State read like any other: its change stream (each final pair once) and the SQL function.
    changes = (
        state.changes()
        .writeStream.format("memory")
        .queryName("published_changes")
        .option("checkpointLocation", str(workdir / "ck-changes"))
        .start()
    )
    changes.processAllAvailable()
    changes.stop()
    pairs = spark.sql(f"SELECT campaign, count, unix_millis({STATE}_time) AS end FROM published_changes").collect()
    spark.read.parquet(str(workdir / "views")).createOrReplaceTempView("views_batch")
    fetched = spark.sql(
        f"SELECT view_id, f.count, unix_millis(f.{STATE}_time) AS end "
        f"FROM (SELECT view_id, sharedstate_fetch('{STATE}', campaign, ts) AS f FROM views_batch)"
    ).collect()

    progress = state.progress()
    final = {
        "changes": sorted([r.campaign, r["count"], r.end] for r in pairs),
        "sql": sorted([r.view_id, r["count"], r.end] for r in fetched),
        "as_of": {str(s): probe(s) for s in PROBES_S},
        "update": str(progress["update"]),
        "writers": {w: str(v) for w, v in progress["writers"].items()},
        "dropped_late": dropped,
    }
    (workdir / "final.json").write_text(json.dumps(final))
    spark.stop()


# ---------------------------------------------------------------- the tests


def run_app(workdir: Path, master: str = "local[3]", conf: dict | None = None, **kwargs):
    return subprocess.Popen([sys.executable, str(APP), str(workdir), master, json.dumps(conf or {})], **kwargs)


def test_window_totals_published_and_fetch_joined_as_of_view_time_equal_the_oracle(workdir):
    ev, files, vw = workload(seed=22)
    write_inputs(workdir, files, vw)
    proc = run_app(workdir)
    assert proc.wait(timeout=900) == 0
    final = check(workdir, ev, vw)
    # the aggregation is the State's one writer, as the query it is (statestore:<query id>)
    assert len(final["writers"]) == 1 and next(iter(final["writers"])).startswith("statestore:")


def committed_versions(workdir: Path) -> int:
    log = workdir / "root" / STATE / "changelog" / "_delta_log"
    return len(list(log.glob("*.json"))) if log.is_dir() else 0


@pytest.mark.slow
def test_kill_9_of_the_driver_mid_stream_then_restart_publishes_each_version_once(workdir):
    ev, files, vw = workload(seed=2207, batches=24)
    write_inputs(workdir, files, vw)
    conf = {"spark.sharedstate.root": str(workdir / "root"), "spark.sharedstate.owner.lease": "5 seconds"}
    first = run_app(workdir, conf=conf)
    try:
        deadline = time.monotonic() + 300
        while committed_versions(workdir) < 8:
            assert first.poll() is None, "the application ended before it could be killed"
            assert time.monotonic() < deadline, "no published version before the kill"
            time.sleep(0.2)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == -signal.SIGKILL
    assert not (workdir / "final.json").exists()
    at_kill = committed_versions(workdir)

    restarted = run_app(workdir, conf=conf)
    assert restarted.wait(timeout=900) == 0
    assert committed_versions(workdir) > at_kill
    check(workdir, ev, vw)


if __name__ == "__main__":
    app(Path(sys.argv[1]), sys.argv[2], json.loads(sys.argv[3]))
