"""TStream's four applications on Spark (issue 24, part (b)): ``ss.transact`` beside what a Spark
user writes today (a foreachBatch applying each batch's final events in time order, the State in a
Delta table with MERGE, or in Redis), on the same input, in the same run.

    .venv/bin/python benchmarks/transactions/bench_transactions.py --out benchmarks/results/transactions --runs 3
    .venv/bin/python benchmarks/transactions/bench_transactions.py --quick --out /tmp/txn-quick     # smoke, ~3 min

Per application and method, the **highest sustained rate** (a search like benchmarks/adcamp's): a
point offers ``--seconds`` of events at a rate (one parquet file per 0.25 s slot into the file
source's directory); it is sustained when

- every outcome came out (within ``--lag-cap-s`` of its file, the point is cut short otherwise),
- the backlog did not grow: the median outcome latency of the last quarter of the events is at most
  0.5 s + 25% of p50 above the second quarter's (the rate the last three quarters were processed
  at is recorded, not judged: over a few seconds a batch's granularity biases it),
- and the method's final States equal the sequential oracle's (``sharedstate.testing.transactions``)
  key by key.

The search runs the common rate ``--common-rate`` first (every side's p50/p99 outcome latency is
reported there: outcome visible - its file visible), then doubles from ``--start`` while sustained
(halves while not) and bisects once between the best sustained and the lowest failed rate. Runs
after the first start at the method's best rate of the first run. The first micro-batch of each
query (planning, code generation) runs before the first file is offered, and one small point per
method runs first and is discarded (JIT warm-up).

Results: ``spark-runs.json`` (every point, the searches' results), ``spark-table.md`` (median of
the runs, min-max) and ``spark-plot.png`` under ``--out``.
"""

from __future__ import annotations

import argparse
import json
import math
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
from sharedstate._jars import conf_file
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


def run_point(spark, method: str, app: str, rate: int, args, redis_port, log) -> dict:
    """One method at one offered rate: ``rate * --seconds`` events of workload `app` (seed = run)."""
    work, expected, files = prepared(app, args.run, rate, args)
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
            now = time.time()
            # Events whose file appeared more than lag-cap ago must have their outcome by now.
            due = sum(1 for t in list(feeder.visible.values()) if t < now - args.lag_cap_s)
            if len(m.done) < due or now - feeder.start_time > len(files) * SLOT_S + args.lag_cap_s + 30:
                aborted = True
                break
    finally:
        feeder.stop()
        feeder.join()
        m.stop()
    complete = not aborted and len(m.done) >= measured
    # A point cut short has not applied every event: its States are not judged (the point is slow).
    wrong = _differences(m.final(), expected.final) if complete else None
    result = {
        "app": app,
        "method": method,
        "run": args.run,
        "offered_rate": rate,
        "events": measured,
        "processed": len(m.done),
        **latency(m.done, feeder, rate, len(files)),
        "complete": complete,
        "correct": None if wrong is None else wrong == 0,
        "wrong_keys": wrong,
        "failure": failure,
        "load_avg_1m": load,
        "wall_s": time.time() - began,
        "batches": batches(m.query),
    }
    reasons = []
    if not result["complete"]:
        reasons.append(f"incomplete ({len(m.done)}/{measured} outcomes)")
    growth, p50 = result["latency_growth_ms"], result["p50_ms"]
    if growth is not None and growth > 500 + 0.25 * (p50 or 0):
        reasons.append(f"latency grew {growth:,.0f} ms")
    if result["correct"] is False:
        reasons.append(f"WRONG: {wrong} keys differ from the oracle")
    result["sustained"] = not reasons
    result["verdict"] = "; ".join(reasons) or "ok"
    shutil.rmtree(workdir, ignore_errors=True)
    p99 = "-" if result["p99_ms"] is None else f"{result['p99_ms']:,.0f}ms"
    log(
        f"  {app} {method:<12} {rate:>7,}/s {'SUSTAINED' if result['sustained'] else 'not sustained':<13} "
        f"p99={p99:>9} correct={result['correct']} load={load:.1f} ({result['wall_s']:.0f}s) {result['verdict']}"
        + (f" {failure}" if failure else "")
    )
    return result


def latency(done: dict[int, float], feeder: Feeder, rate: int, slots: int) -> dict:
    """p50/p99 outcome latency over the events after the first quarter (a fresh query's first batches
    are slower), the latency growth (median of the last quarter minus the second quarter's) and the
    rate the steady part was processed at (its events / (its last outcome - its first + one slot))."""
    ids = [e for e in done if e in feeder.visible]
    if not ids:
        return {"p50_ms": None, "p99_ms": None, "latency_growth_ms": None, "processed_rate": None}
    visible = np.array([feeder.visible[e] for e in ids]) - feeder.start_time
    lat = np.array([done[e] - feeder.visible[e] for e in ids]) * 1000
    span = slots * SLOT_S
    steady = visible >= span * 0.25
    q2 = lat[(visible >= span * 0.25) & (visible < span * 0.5)]
    q4 = lat[visible >= span * 0.75]
    done_at = np.array([done[e] for e in ids]) - feeder.start_time
    rate_steady = None
    if np.count_nonzero(steady) > 1:
        # from the first outcome to the last: a method that keeps up takes the input's span
        took = done_at[steady].max() - done_at[steady].min() + SLOT_S
        rate_steady = float(np.count_nonzero(steady) / took)
    return {
        "p50_ms": float(np.percentile(lat[steady] if steady.any() else lat, 50)),
        "p99_ms": float(np.percentile(lat[steady] if steady.any() else lat, 99)),
        "latency_growth_ms": float(np.median(q4) - np.median(q2)) if len(q2) and len(q4) else None,
        "processed_rate": rate_steady,
    }


def batches(query) -> dict:
    """Micro-batches the query ran (of the last 100 Spark keeps: with input, and without: run by a
    step of U alone) and the mean of each phase of a batch (Spark's progress, ms)."""
    progress = [json.loads(p.json) for p in query.recentProgress] if query is not None else []
    phases: dict[str, list[float]] = {}
    for p in progress:
        for k, v in (p.get("durationMs") or {}).items():
            phases.setdefault(k, []).append(v)
    with_input = [p for p in progress if p.get("numInputRows")]
    return {
        "count": len(progress),
        "with_input": len(with_input),
        "mean_input_rows": round(float(np.mean([p["numInputRows"] for p in with_input])), 1) if with_input else 0,
        "mean_ms": {k: round(float(np.mean(v)), 1) for k, v in phases.items()},
    }


_prepared: dict = {}


def prepared(app: str, seed: int, rate: int, args):
    """The workload (`rate * seconds` events), its oracle and its staged files, made once per key."""
    key = (app, seed, rate)
    if key not in _prepared:
        for k in [k for k in _prepared if k[:2] != (app, seed)]:  # the points of one app and run are kept
            shutil.rmtree(Path(args.scratch) / "staged-{}-{}-{}".format(*k), ignore_errors=True)
            del _prepared[k]
        events = max(40, int(rate * args.seconds))
        work = workload(app, seed, events, args.records)
        files = stage(work, rate, Path(args.scratch) / f"staged-{app}-{seed}-{rate}")
        _prepared[key] = (work, work.oracle(), files)
    return _prepared[key]


def nice(rate: float) -> int:
    """Two significant digits, a multiple of 4 (whole events per 0.25 s slot)."""
    digits = max(0, int(math.floor(math.log10(rate))) - 1)
    return max(4, int(round(round(rate / 10**digits) * 10**digits / 4)) * 4)


def search(ok, start: int, low: int, high: int, common: int | None, bisect_steps: int) -> int | None:
    """The highest rate `ok` holds at: `common` first, then doubling from `start` while it holds
    (halving while not), then `bisect_steps` geometric bisections. `ok` caches its points."""
    if common is not None and not ok(common):
        start = min(start, common)
    good, bad = (start, None) if ok(start) else (None, start)
    if good is not None:
        if common is not None and common > good and ok(common):
            good = common
        while good * 2 <= high and ok(good * 2):
            good *= 2
        bad = good * 2 if good * 2 <= high else None
    elif common is not None and common < bad and ok(common):
        good = common
    else:
        while nice(bad / 2) >= low and not ok(nice(bad / 2)):
            bad = nice(bad / 2)
        good = nice(bad / 2) if nice(bad / 2) >= low else None
    for _ in range(bisect_steps):
        if good is None or bad is None:
            break
        mid = nice(math.sqrt(good * bad))
        if mid in (good, bad):
            break
        if ok(mid):
            good = mid
        else:
            bad = mid
    return good


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True)
    ap.add_argument("--apps", default="GS,SL,OB,TP")
    ap.add_argument("--methods", default=",".join(METHODS))
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=5, help="seconds of input per point")
    ap.add_argument("--records", type=int, default=1000, help="records per State (the paper: 10,000)")
    ap.add_argument("--common-rate", type=int, default=200, help="the rate every side's latency is compared at")
    ap.add_argument("--start", type=int, default=1000, help="the search's first rate after the common one")
    ap.add_argument("--low", type=int, default=48)
    ap.add_argument("--high", type=int, default=32000)
    ap.add_argument("--bisect", type=int, default=1, help="bisection steps after doubling")
    ap.add_argument("--lag-cap-s", type=float, default=20, help="a point is cut once an outcome is this late")
    ap.add_argument("--scratch", default=None)
    ap.add_argument("--no-warmup", dest="warmup", action="store_false", help="skip the discarded warm-up points")
    ap.add_argument(
        "--no-same-batch-commit",
        dest="same_batch_commit",
        action="store_false",
        help="the plugin emits each outcome a batch after its commit, as before (README.md)",
    )
    ap.add_argument("--quick", action="store_true", help="smoke: 2 s points, 200 records, one run, no search")
    args = ap.parse_args(argv)
    if args.quick:
        args.seconds, args.records, args.runs, args.warmup = 2, 200, 1, False
        args.common_rate, args.start, args.low, args.high, args.bisect = 200, 200, 200, 200, 0
        args.lag_cap_s = max(args.lag_cap_s, 30)  # the smoke checks correctness, not speed
    for name in ("common_rate", "start", "low", "high"):
        if getattr(args, name) % 4:
            flag, value = name.replace("_", "-"), getattr(args, name)
            ap.error(f"--{flag}: {value} is not a multiple of 4 (whole events per 0.25 s slot)")
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
    spark = ss.session("txn-bench", master="local[2]", **SESSION_CONF, **extra_conf(args))
    spark.sparkContext.setLogLevel("ERROR")
    results: list[dict] = []
    searches: list[dict] = []
    began = time.time()
    port = redis and redis.port

    def save() -> None:
        """The results so far (a long run interrupted keeps its finished points)."""
        loads = [p["load_avg_1m"] for p in results]
        meta = {
            "command": " ".join(shlex.quote(a) for a in [sys.executable, *sys.argv]),
            "started_utc": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime(began)),
            "minutes": round((time.time() - began) / 60, 1),
            "machine": f"{os.cpu_count()} cores, {platform.platform()}",
            "load_avg_1m": [min(loads), max(loads)] if loads else None,
            "redis": redis.version if redis is not None else None,
            "settings": {
                k: getattr(args, k)
                for k in ("seconds", "records", "common_rate", "start", "low", "high", "bisect", "lag_cap_s")
                + ("runs", "warmup", "same_batch_commit")
            },
        }
        (out / "spark-runs.json").write_text(
            json.dumps({"meta": meta, "searches": searches, "points": results}, indent=1) + "\n"
        )
        write_report(out, meta, searches, results)

    try:
        if args.warmup:
            # One small point per method first, discarded: the JVM's JIT and Spark's first queries
            # would otherwise penalise whichever method runs first.
            log("warm-up (discarded)")
            args.run = 0
            for method in methods:
                run_point(spark, method, "TP", args.common_rate, args, port, log)
        best_first: dict[tuple[str, str], int] = {}
        for run in range(1, args.runs + 1):
            args.run = run
            for app in apps:
                log(f"run {run} {app}")
                for method in methods:
                    tried: dict[int, dict] = {}

                    def ok(rate: int, method=method, app=app, tried=tried) -> bool:
                        if rate not in tried:
                            tried[rate] = run_point(spark, method, app, rate, args, port, log)
                            results.append(tried[rate])
                            save()
                        return tried[rate]["sustained"]

                    start = best_first.get((app, method), args.start)
                    best = search(ok, start, args.low, args.high, args.common_rate, args.bisect)
                    if run == 1 and best:
                        best_first[(app, method)] = best
                    searches.append({"app": app, "method": method, "run": run, "max_sustained_rate": best})
                    save()
    finally:
        spark.stop()
        if redis is not None:
            redis.stop()
    shutil.rmtree(scratch, ignore_errors=True)
    return results


SESSION_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.driver.memory": "4g",
    "spark.databricks.delta.snapshotPartitions": "2",
    "spark.sql.session.timeZone": "UTC",
}


def extra_conf(args) -> dict:
    """Session settings beyond SESSION_CONF: with --no-same-batch-commit the plugin's switch."""
    if args.same_batch_commit:
        return {}
    log = f"-Dlog4j2.configurationFile=file:{conf_file('log4j2.properties')}"  # what ss.session sets by default
    return {"spark.driver.extraJavaOptions": f"{log} -D{SAME_BATCH_COMMIT}=false"}


SAME_BATCH_COMMIT = "sharedstate.transactions.sameBatchCommit"  # the JVM property (SameBatchCommit.scala)


if __name__ == "__main__":
    main()
