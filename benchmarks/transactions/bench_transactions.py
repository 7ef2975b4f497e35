"""TStream's four applications on Spark (issue 24, part (b)): ``ss.transact`` beside what a Spark
user writes today (a foreachBatch applying each batch's final events in time order, the State in a
Delta table with MERGE, or in Redis), on the same input, in the same run.

    .venv/bin/python benchmarks/transactions/bench_transactions.py --out benchmarks/results/transactions --runs 3
    .venv/bin/python benchmarks/transactions/bench_transactions.py --quick --out /tmp/txn-quick     # smoke, ~2 min

A fixed offered load, not a search for the highest sustained rate (a search over 4 applications x
3 methods x 3 runs does not fit the 2-core machine's time): each point offers ``--events`` events at
``--rate`` events/s (one file per 0.25 s slot into the file source's directory) and measures

- throughput: events / (last outcome visible - first file visible), the rate the method really
  processed at (at most the offered rate: a method that keeps up shows about the offered rate);
- p50/p99 outcome latency: an event's outcome visible - its file visible (at that load: a method
  that does not keep up has a growing backlog, and its latency shows it);
- the first micro-batch of each query (planning, code generation) runs before the first file is
  offered, out of the measurement, and one small point per method runs first and is discarded
  (JIT warm-up);
- correctness: each method's final States against the sequential oracle
  (``sharedstate.testing.transactions``), key by key.

Results: ``spark-runs.json`` (every point), ``spark-table.md`` (median of the runs, min-max) and
``spark-plot.png`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shlex
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

import sharedstate as ss
from sharedstate.testing.adcamp import to_spark_parquet
from sharedstate.testing.transactions import APPLICATIONS, TxnWorkload

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "adcamp"))

from txn_methods import METHODS  # noqa: E402
from txn_report_spark import write_report  # noqa: E402

SLOT_S = 0.25


def workload(app: str, seed: int, events: int, records: int) -> TxnWorkload:
    """The paper's parameters (Zipf 0.6, multi-partition length 4 at 25%; TP 100 segments at 0.2),
    `records` records (10k in the paper), `events` transactions."""
    if app == "TP":
        return APPLICATIONS[app](seed, events=events)
    return APPLICATIONS[app](seed, records=records, events=events)


def stage(work: TxnWorkload, rate: int, directory: Path) -> list[tuple[Path, list[int]]]:
    """The events in arrival order, one parquet file per slot of `rate * SLOT_S` events; each file
    with the event ids it holds."""
    directory.mkdir(parents=True, exist_ok=True)
    per_file = max(1, int(rate * SLOT_S))
    frame = work.events.copy()
    # A file whose STRING column is all null (SL: only deposits) would otherwise get another type.
    for column in work.event_schema.split(","):
        name, kind = column.split()[:2]
        if kind.upper() == "STRING":
            frame[name] = frame[name].astype("string")
    files = []
    for i, start in enumerate(range(0, len(frame), per_file)):
        part = frame.iloc[start : start + per_file].reset_index(drop=True)
        path = directory / f"part-{i:05d}.parquet"
        to_spark_parquet(part, path)
        files.append((path, [int(e) for e in part["event_id"]]))
    return files


class Feeder(threading.Thread):
    """Hard-links file i into the live directory at start + i * SLOT_S; notes when each appeared."""

    def __init__(self, files: list[tuple[Path, list[int]]], live: Path):
        super().__init__(name="txn-feeder", daemon=True)
        self.files, self.live = files, live
        self.visible: dict[int, float] = {}  # event id -> wall time its file appeared
        self.start_time = 0.0
        self._halt = threading.Event()

    def run(self) -> None:
        self.start_time = time.time()
        for i, (path, ids) in enumerate(self.files):
            if self._halt.wait(max(0.0, self.start_time + i * SLOT_S - time.time())):
                return
            now = time.time()
            os.link(path, self.live / path.name)
            os.utime(self.live / path.name, (now, now))
            for e in ids:
                self.visible[e] = now

    def stop(self) -> None:
        self._halt.set()


def _plain(v):
    if isinstance(v, (tuple, list, np.ndarray)):
        return [_plain(x) for x in v]
    if isinstance(v, np.generic):
        return v.item()
    return v


def _differences(got: dict, want: dict) -> int:
    """Keys whose final value differs (or is missing on one side), over every State."""
    bad = 0
    for state, values in want.items():
        g = {_plain(k): _plain(v) for k, v in got.get(state, {}).items()}
        w = {_plain(k): _plain(v) for k, v in values.items()}
        bad += sum(1 for k in set(g) | set(w) if g.get(k) != w.get(k))
    return bad


def run_point(spark, method: str, app: str, work: TxnWorkload, expected, files, args, redis_port, log) -> dict:
    uid = f"{app.lower()}_{method.replace('-', '_')}_{os.getpid()}_{int(time.time() * 1000) % 10**8}"
    workdir = Path(args.scratch) / f"point-{uid}"
    live = workdir / "in"
    live.mkdir(parents=True)
    events = spark.readStream.schema(work.event_schema).parquet(str(live))
    m = METHODS[method](spark, work, workdir, uid, redis_port)
    load = os.getloadavg()[0]
    began = time.time()
    m.start(events)
    # The first micro-batch of a fresh query plans and compiles: out of the measurement, for every method.
    warm = time.time()
    while m.query.lastProgress is None and m.failure() is None and time.time() - warm < 120:
        time.sleep(0.1)
    feeder = Feeder(files, live)
    feeder.start()
    measured = len(expected.committed)
    failure, aborted = None, False
    try:
        while True:
            time.sleep(0.25)
            failure = m.failure()
            if failure:
                aborted = True
                break
            if len(m.done) >= measured:
                break
            if time.time() - feeder.start_time > args.cap_s:
                aborted = True
                break
    finally:
        feeder.stop()
        feeder.join()
        m.stop()
    lat = sorted((m.done[e] - feeder.visible[e]) * 1000 for e in m.done if e in feeder.visible)
    end = max(m.done.values()) if m.done else time.time()
    final = m.final() if not failure else {}
    wrong = _differences(final, expected.final) if not failure else None
    result = {
        "app": app,
        "method": method,
        "events": measured,
        "offered_rate": args.rate,
        "processed": len(m.done),
        "throughput": len(m.done) / max(1e-9, end - feeder.start_time),
        "p50_ms": float(np.percentile(lat, 50)) if lat else None,
        "p99_ms": float(np.percentile(lat, 99)) if lat else None,
        "complete": not aborted and len(m.done) >= measured,
        "correct": wrong == 0,
        "wrong_keys": wrong,
        "failure": failure,
        "load_avg_1m": load,
        "wall_s": time.time() - began,
    }
    shutil.rmtree(workdir, ignore_errors=True)
    p99 = "-" if result["p99_ms"] is None else f"{result['p99_ms']:,.0f}ms"
    log(
        f"  {app} {method:<12} {result['throughput']:>8,.0f} ev/s p99={p99:>9} "
        f"complete={result['complete']} correct={result['correct']} load={load:.1f} ({result['wall_s']:.0f}s)"
        + (f" {failure}" if failure else "")
    )
    return result


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--apps", default="GS,SL,OB,TP")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--events", type=int, default=6000)
    ap.add_argument("--records", type=int, default=1000, help="records per State (the paper: 10,000)")
    ap.add_argument("--rate", type=int, default=4000, help="offered events/s")
    ap.add_argument("--cap-s", type=float, default=240, help="a point stops after this long (incomplete)")
    ap.add_argument("--scratch", default=None)
    ap.add_argument("--no-warmup", dest="warmup", action="store_false", help="skip the discarded warm-up points")
    ap.add_argument("--quick", action="store_true", help="smoke: 300 events, 200 records, one run")
    args = ap.parse_args(argv)
    if args.quick:
        args.events, args.records, args.runs, args.rate, args.cap_s, args.warmup = 300, 200, 1, 1000, 120, False
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="txn-bench-"))
    scratch.mkdir(parents=True, exist_ok=True)
    args.scratch = str(scratch)
    apps = [a.strip().upper() for a in args.apps.split(",")]
    methods = [m.strip() for m in args.methods.split(",")]
    for m in methods:
        if m not in METHODS:
            ap.error(f"--methods: unknown method {m!r}; known: {', '.join(METHODS)}")

    def log(line: str) -> None:
        print(line, flush=True)

    redis = None
    if "redis" in methods:
        from redis_server import RedisServer

        redis = RedisServer(str(scratch))
    spark = ss.session(
        "txn-bench",
        master="local[2]",
        **{
            "spark.sql.shuffle.partitions": "2",
            "spark.driver.memory": "4g",
            "spark.databricks.delta.snapshotPartitions": "2",
            "spark.sql.session.timeZone": "UTC",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    results = []
    began = time.time()

    def save() -> None:
        """The results so far (a long run interrupted keeps its finished points)."""
        meta = {
            "command": " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv]),
            "started_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(began)),
            "minutes": round((time.time() - began) / 60, 1),
            "machine": f"{os.cpu_count()} cores, {platform.platform()}",
            "redis": redis.version if redis is not None else None,
            "settings": {k: getattr(args, k) for k in ("events", "records", "rate", "runs", "cap_s", "warmup")},
        }
        (out / "spark-runs.json").write_text(json.dumps({"meta": meta, "points": results}, indent=1) + "\n")
        write_report(out, meta, results)

    try:
        if args.warmup:
            # One small point per method first, discarded: the JVM's JIT and Spark's first queries
            # would otherwise penalise whichever method runs first.
            work = workload("TP", seed=0, events=300, records=100)
            files = stage(work, args.rate, scratch / "staged-warmup")
            log("warm-up (discarded)")
            for method in methods:
                run_point(spark, method, "TP", work, work.oracle(), files, args, redis and redis.port, log)
        for run in range(1, args.runs + 1):
            for app in apps:
                work = workload(app, seed=run, events=args.events, records=args.records)
                expected = work.oracle()
                files = stage(work, args.rate, scratch / f"staged-{app}-{run}")
                log(f"run {run} {app}: {len(expected.committed)} events at {args.rate}/s offered")
                for method in methods:
                    point = run_point(spark, method, app, work, expected, files, args, redis and redis.port, log)
                    point["run"] = run
                    results.append(point)
                    save()
    finally:
        spark.stop()
        if redis is not None:
            redis.stop()
    shutil.rmtree(scratch, ignore_errors=True)
    return results


if __name__ == "__main__":
    main()
