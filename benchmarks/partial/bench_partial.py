"""Partial States on Spark (issue 25): the DGS fraud-detection / value-barrier pipeline, BSP online
learning and SDG collaborative filtering, each on sharedstate at 1 and 2 partitions beside what a
Spark user writes today (sides.py), in one Spark application. See benchmarks/README.md.

    .venv/bin/python benchmarks/partial/bench_partial.py --out benchmarks/results/partial --runs 3
    .venv/bin/python benchmarks/partial/bench_partial.py --out /tmp/partial-quick --quick     # tiny, one run

Applications: fraud (DGS fraud detection), barrier (DGS value barrier: fraud's first two queries,
the barriers' aggregates as the output), learning (BSP online learning), cf (SDG collaborative
filtering). A side with P partitions runs every stage of every query with P tasks (sides.parallelism);
the peer runs with `--peer-partitions`. Modes, each point with fresh queries and States:
- sustained (fraud, barrier): the highest sustained rate, by a search. A point offers `rate` events/s
  for `--feed` seconds, one file per stream every `--pace-rate` seconds, and every side reads every
  file visible when its micro-batch starts (no per-trigger cap: the batch size is what the rate and
  the side's own batch time give, as a backlogged Kafka source without maxOffsetsPerTrigger). It is
  sustained when every event came out equal to the oracle, p99 lag (output batch done - the event's
  file visible) <= `--max-p99` and the median lag of the last quarter of the files <= 0.5 s + 1.25 x
  that of the second quarter (not falling behind). Each side first runs `--common-rate` (its p50/p99
  are the latency the table reports), then the search: doubling from the start rate while sustained,
  halving while not, then bisecting (geometric mean) until the bracket is within `--precision`.
- capacity (learning, cf; the earlier method): every file visible at once, one file per micro-batch;
  events/s = the checked events after the first output batch over the time from that batch to the last;
- latency (learning, cf): one file per stream every `--pace` seconds, one per micro-batch; p50 / p99 lag.
Each side's output is checked against the application's sequential oracle (every point).
The JSON has every point; table.md the medians over runs with min-max; plot.png the rates.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

import sharedstate as ss

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import sides  # noqa: E402
from workloads import (  # noqa: E402
    FULL,
    LARGE,
    QUICK,
    Staged,
    barrier_expected,
    cf_expected,
    fraud_expected,
    learning_expected,
    learning_weights,
    stage_barrier,
    stage_cf,
    stage_fraud,
    stage_learning,
    stage_rate,
)

from sharedstate.demos.fraud import comparable  # noqa: E402
from sharedstate.testing.arrivals import SECOND  # noqa: E402

SIDES = ["sharedstate-1", "sharedstate-2", "spark-peer"]
APPS = ["fraud", "barrier", "learning", "cf"]
# the applications whose 2-partition target is 1.8x (issue 25: value barrier and fraud detection)
SCALING_APPS = {"fraud", "barrier"}
MODES = ["sustained", "capacity", "latency"]
FIXED_MODES = ["capacity", "latency"]
# the modes an application runs unless --modes says otherwise
DEFAULT_MODES = {"fraud": ["sustained"], "barrier": ["sustained"], "learning": FIXED_MODES, "cf": FIXED_MODES}
# sustained search: where each application starts (events/s), the rate every side runs for latency
START_RATE = {"fraud": 8_000, "barrier": 16_000}
COMMON_RATE = {"fraud": 1_000, "barrier": 2_000}


@dataclass
class Point:
    app: str
    side: str
    mode: str
    events: int
    events_per_s: float
    p50_ms: float
    p99_ms: float
    seconds: float
    correct: bool
    wrong: int
    load: float
    phases: dict  # per query: micro-batches and the sum of each durationMs phase, in ms (where the time goes)
    # sustained mode: the rate asked for, offered (events over the feed's span), whether it was sustained,
    # the median lag of the second and last quarter of the files, the first query's median rows per micro-batch
    rate: float | None = None
    offered_per_s: float | None = None
    sustained: bool | None = None
    lag_q2_ms: float | None = None
    lag_q4_ms: float | None = None
    batch_rows: float | None = None
    # CPU the point's JVM got (its CPU seconds over the point's wall seconds: at most nproc) and how busy
    # the whole machine was meanwhile (0-1): a side can only use the cores the shared machine leaves it
    jvm_cores: float | None = None
    machine_busy: float | None = None
    cpu_by_thread: dict | None = None  # the JVM's CPU seconds by kind of thread (CpuUse.KINDS)


class Feeder(threading.Thread):
    """Hard-links file i of every stream into its live directory at start + i * pace (all at once,
    in order, when pace is 0) and records when each file of the measured stream became visible."""

    def __init__(self, staged: Staged, live: dict[str, Path], pace: float):
        super().__init__(name="partial-feeder", daemon=True)
        self.staged, self.live, self.pace = staged, live, pace
        self.visible: dict[int, float] = {}
        self.finished: float | None = None  # when the last file became visible
        self._halt = threading.Event()

    def run(self) -> None:
        start = time.time()
        longest = max(len(files) for _, files in self.staged.streams.values())
        for i in range(longest):
            if self._halt.wait(max(0.0, start + i * self.pace - time.time())):
                return
            now = time.time()
            for name, (_, files) in self.staged.streams.items():
                if i < len(files):
                    dst = self.live[name] / files[i].name
                    os.link(files[i], dst)
                    # the file source reads in modification-time order; equal times would tie
                    os.utime(dst, (now - longest + i, now - longest + i))
            self.visible[i] = now
        self.finished = time.time()

    def stop(self) -> None:
        self._halt.set()


def per_id(staged: Staged, got: pd.DataFrame) -> pd.DataFrame:
    """The checked output, one row per id: collaborative filtering's rows (one per request and item) summed per
    request (None for a user with no item), done when its last row was."""
    if staged.app == "barrier":  # the closing barrier is not checked
        return got[got["rule_id"].isin(staged.weights)]
    if staged.app != "cf":
        return got
    rows = []
    for req, part in got.groupby("req_id"):
        vecs = [c for c in part["counts"] if c is not None]
        total = [int(sum(c[k] for c in vecs)) for k in range(len(vecs[0]))] if vecs else None
        rows.append((int(req), total, part["done_at"].max(), len(part)))
    return pd.DataFrame(rows, columns=["req_id", "counts", "done_at", "rows"])


def check(staged: Staged, got: pd.DataFrame, present_only: bool = False) -> int:
    """How many checked events differ from the oracle (missing, duplicated or wrong); with
    `present_only` (a point cut short) missing ones do not count."""
    if staged.app == "fraud":
        want = fraud_expected(staged.work)
        if present_only:
            want = want[want["tx_id"].isin(got["tx_id"])]
        if not got["tx_id"].is_unique:
            return int(got["tx_id"].duplicated().sum()) + len(want)
        merged = want.merge(comparable(got.drop(columns=["done_at"])), on="tx_id", how="outer", suffixes=("", "_g"))
        bad = 0
        for c in ("rule_id", "total", "n", "flagged"):
            a, b = merged[c], merged[f"{c}_g"]
            bad_c = ~((a == b).fillna(False) | (a.isna() & b.isna()))
            bad = max(bad, int(bad_c.sum()))
        return bad
    if staged.app == "barrier":
        want = barrier_expected(staged.work)
        if present_only:
            out = set(got["rule_id"].astype(int))
            want = {k: v for k, v in want.items() if k in out}
        if not got["rule_id"].is_unique:
            return int(got["rule_id"].duplicated().sum()) + len(want)
        have = {
            int(r): (None if pd.isna(t) else int(t), None if pd.isna(n) else int(n))
            for r, t, n in zip(got["rule_id"], got["total"], got["n"])
        }
        return sum(have.get(k, "missing") != v for k, v in want.items()) + len(set(have) - set(want))
    if staged.app == "cf":
        want = cf_expected(staged.work)  # a row output twice shows as a wrong sum
        have = dict(zip(got["req_id"].astype(int), got["counts"]))
        return sum(have.get(k, "missing") != v for k, v in want.items()) + len(set(have) - set(want))
    want = learning_expected(staged.work)
    if not got["ev_id"].is_unique:
        return int(got["ev_id"].duplicated().sum()) + len(want)
    have = learning_weights(got)
    return sum(have.get(k, "missing") != v for k, v in want.items()) + len(set(have) - set(want))


@dataclass
class Args:
    """How a point runs (from the command line)."""

    scratch: Path
    timeout: float
    pace: float  # capacity/latency: seconds between files in the latency points
    pace_rate: float  # sustained: seconds between files
    feed: float  # sustained: seconds of feed per point
    max_p99_ms: float
    abort_after: float  # sustained: give up this long after the last file while events are missing
    peer_partitions: int
    jvm_pid: int | None = None


def side_setup(side: str, mode: str, args: Args) -> sides.Setup:
    partitions = args.peer_partitions if side == "spark-peer" else int(side.rsplit("-", 1)[1])
    return sides.Setup(partitions, None if mode == "sustained" else 1)


def start_side(spark, staged: Staged, side: str, setup: sides.Setup, live: dict, work: Path, uid: str, rec):
    lateness_s = staged.work.lateness_s
    with sides.parallelism(spark, setup.partitions):
        if side.startswith("sharedstate"):
            start = {
                "fraud": sides.sharedstate_fraud,
                "barrier": sides.sharedstate_barrier,
                "learning": sides.sharedstate_learning,
                "cf": sides.sharedstate_cf,
            }[staged.app]
            return start(spark, live, work, uid, setup, f"{lateness_s} seconds", rec)
        if staged.app in ("fraud", "barrier"):
            return sides.peer_fraud(
                spark,
                live,
                work,
                setup,
                staged.work.real_tx,
                lateness_s * SECOND,
                rec,
                barriers_only=staged.app == "barrier",
            )
        if staged.app == "cf":
            return sides.peer_cf(spark, live, work, setup, lateness_s * SECOND, rec)
        return sides.peer_learning(spark, live, work, setup, lateness_s * SECOND, rec)


class CpuUse:
    """The JVM's CPU seconds (/proc/<pid>/stat), by kind of thread (/proc/<pid>/task/*: the executor
    tasks, the queries' driver threads, GC, the JIT, the rest), and the machine's busy and total
    jiffies (/proc/stat), from the start of a point to `since_start`."""

    # thread names as the kernel keeps them (15 characters)
    KINDS = [
        ("executor tasks", ("Executor task",)),
        ("query driver threads", ("stream executio",)),
        ("State appliers (common pool)", ("ForkJoinPool.co",)),
        ("GC", ("GC Thread", "G1 ", "VM Thread", "GC ")),
        ("JIT compiler", ("C1 CompilerThre", "C2 CompilerThre")),
    ]

    def __init__(self, pid: int | None):
        self.pid = pid
        self.tick = os.sysconf("SC_CLK_TCK")
        self.start = self._now()
        self.threads = self._threads()

    def _now(self) -> tuple[float, float, float, float] | None:
        try:
            jvm = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()
            cpu = (int(jvm[11]) + int(jvm[12])) / self.tick  # utime + stime
            fields = [int(x) for x in Path("/proc/stat").read_text().splitlines()[0].split()[1:]]
            idle = fields[3] + fields[4]
            return time.time(), cpu, sum(fields) - idle, sum(fields)
        except (OSError, ValueError, IndexError, TypeError):
            return None

    def _threads(self) -> dict[str, tuple[str, float]]:
        out = {}
        try:
            for task in Path(f"/proc/{self.pid}/task").iterdir():
                try:
                    name = (task / "comm").read_text().strip()
                    stat = (task / "stat").read_text().rsplit(")", 1)[1].split()
                    out[task.name] = (name, (int(stat[11]) + int(stat[12])) / self.tick)
                except (OSError, ValueError, IndexError):
                    continue
        except (OSError, TypeError):
            pass
        return out

    def _kind(self, name: str) -> str:
        return next((k for k, prefixes in self.KINDS if name.startswith(prefixes)), "other")

    def by_thread(self) -> dict[str, float]:
        """CPU seconds per kind of thread since the start (threads that ended meanwhile are not counted)."""
        out: dict[str, float] = {}
        for tid, (name, cpu) in self._threads().items():
            before = self.threads.get(tid, (name, 0.0))[1]
            kind = self._kind(name)
            out[kind] = round(out.get(kind, 0.0) + cpu - before, 2)
        return out

    def since_start(self) -> tuple[float | None, float | None]:
        end = self._now()
        if self.start is None or end is None or end[0] <= self.start[0] or end[3] <= self.start[3]:
            return None, None
        cores = (end[1] - self.start[1]) / (end[0] - self.start[0])
        return round(cores, 2), round((end[2] - self.start[2]) / (end[3] - self.start[3]), 2)


def jvm_pid(spark) -> int | None:
    try:
        return int(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    except Exception:  # noqa: BLE001 (a diagnostic only)
        return None


@dataclass
class Observed:
    got: pd.DataFrame  # the checked output, one row per id, with done_at
    visible: dict[int, float]  # file -> when it became visible
    phases: dict
    batch_rows: float | None  # the first query's median input rows per micro-batch with input
    load: float
    began: float
    failure: str | None
    jvm_cores: float | None = None
    machine_busy: float | None = None
    cpu_by_thread: dict | None = None


def observe(spark, staged: Staged, side: str, mode: str, args: Args, uid: str) -> Observed:
    """Runs one point: starts the side's queries, feeds the files, waits for every checked event (or
    the timeout, or in sustained mode `abort_after` seconds after the last file), stops everything."""
    work = args.scratch / f"point-{uid}"
    shutil.rmtree(work, ignore_errors=True)
    live = {name: work / "live" / name for name in staged.streams}
    for d in live.values():
        d.mkdir(parents=True)
    columns = {
        "fraud": sides.FRAUD_COLUMNS,
        "barrier": sides.BARRIER_COLUMNS,
        "learning": sides.LEARNING_COLUMNS,
        "cf": sides.CF_COLUMNS,
    }[staged.app]
    rec = sides.Recorder(columns)
    load = os.getloadavg()[0]
    queries = start_side(spark, staged, side, side_setup(side, mode, args), live, work, uid, rec)
    pace = {"sustained": args.pace_rate, "latency": args.pace}.get(mode, 0.0)
    feeder = Feeder(staged, live, pace)
    cpu = CpuUse(args.jvm_pid)
    began = time.time()
    feeder.start()
    failure = None
    try:
        while rec.rows() < staged.events:
            for q in queries:
                if q.exception() is not None:
                    failure = str(q.exception())
            now = time.time()
            if failure or now - began > args.timeout:
                break
            if mode == "sustained" and feeder.finished is not None and now - feeder.finished > args.abort_after:
                break  # fell behind: not sustained
            time.sleep(0.2)
    finally:
        feeder.stop()
        jvm_cores, machine_busy = cpu.since_start()
        cpu_by_thread = cpu.by_thread()  # before the queries stop (their driver threads end with them)
        phases = {}
        rows_first = []
        for i, q in enumerate(queries):
            progress = [p for p in q.recentProgress if p["numInputRows"] > 0]
            sums: dict = {"batches": len(progress), "rows": sum(p["numInputRows"] for p in progress)}
            for p in progress:
                for k, v in p["durationMs"].items():
                    sums[k] = sums.get(k, 0) + v
            phases[f"q{i}"] = sums
            if i == 0:
                rows_first = [p["numInputRows"] for p in progress]
        if not failure and rec.rows() < staged.events and time.time() - began > args.timeout:
            _report_stuck(spark, staged, rec, queries, work, uid)
        for q in queries:
            q.stop()
        for name in ss.State.names(spark):  # States live as long as the application
            if name.endswith(uid):
                ss.State.get(spark, name).drop()
    got = per_id(staged, rec.result())
    shutil.rmtree(work, ignore_errors=True)
    if failure is None and time.time() - began > args.timeout and len(got) < staged.events:
        failure = f"{len(got)} of {staged.events} in {args.timeout}s"
    batch_rows = float(np.median(rows_first)) if rows_first else None
    return Observed(
        got, dict(feeder.visible), phases, batch_rows, load, began, failure, jvm_cores, machine_busy, cpu_by_thread
    )


def _report_stuck(spark, staged: Staged, rec, queries, work: Path, uid: str) -> None:
    """A point that timed out: what its missing ids, States, queries and waiting rows were (stderr)."""
    try:
        _print_stuck(spark, staged, rec, queries, work, uid)
    except Exception as e:  # the report is a diagnosis: the point fails with its timeout either way
        print(f"STUCK report failed: {e!r}", file=sys.stderr)


def _print_stuck(spark, staged: Staged, rec, queries, work: Path, uid: str) -> None:
    got = set(rec.result()[rec.columns[0]].tolist())
    missing = [(f, i) for f, ids in enumerate(staged.measured_ids) for i in ids if i not in got]
    print(f"STUCK {staged.app}: missing (file, id) {missing[:20]}", file=sys.stderr)
    for name in ss.State.names(spark):
        if name.endswith(uid):
            state = ss.State.get(spark, name)
            print(
                f"STUCK state {name}: progress {state.progress()} writers {state.writers()} readers {state.readers()}",
                file=sys.stderr,
            )
    for q in queries:
        last = q.lastProgress or {}
        sources = [
            (s.get("description"), s.get("startOffset"), s.get("endOffset"), s.get("numInputRows"))
            for s in last.get("sources", [])
        ]
        print(
            f"STUCK query {q.name}: batch {last.get('batchId')} active {q.isActive} status {q.status} "
            f"sources {sources}",
            file=sys.stderr,
        )
    pid = spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid()
    dump = Path(tempfile.gettempdir()) / f"sharedstate-stuck-{uid}-threads.txt"
    dump.write_text(subprocess.run(["jcmd", str(pid), "Thread.print"], capture_output=True, text=True).stdout)
    print(f"STUCK threads of the JVM: {dump}", file=sys.stderr)
    kept = Path(tempfile.gettempdir()) / f"sharedstate-stuck-{uid}"
    for ck in work.glob("ck-*"):
        shutil.copytree(ck, kept / ck.name, dirs_exist_ok=True)
    print(f"STUCK checkpoints kept in {kept}", file=sys.stderr)
    for d in sorted(work.rglob("fetch-waiting")):
        files = sorted(p for p in d.rglob("*") if p.is_file() and not p.name.startswith("."))
        print(f"STUCK waiting {d}: {[(str(p.relative_to(d)), p.stat().st_size) for p in files[-8:]]}", file=sys.stderr)


def _lags_ms(staged: Staged, obs: Observed) -> tuple[np.ndarray, np.ndarray, int]:
    """Per output id: its lag (done - its file visible) in ms and its file's rank among the measured
    files (those with checked ids); and how many measured files there are."""
    files = [f for f, ids in enumerate(staged.measured_ids) if ids]
    rank = {f: r for r, f in enumerate(files)}
    ids = np.concatenate([np.asarray(staged.measured_ids[f], dtype="int64") for f in files])
    file_of = np.concatenate([np.full(len(staged.measured_ids[f]), f) for f in files])
    done = obs.got.set_index(staged.id_column)["done_at"]
    present = np.isin(ids, done.index.to_numpy())
    ids, file_of = ids[present], file_of[present]
    visible = np.array([obs.visible.get(int(f), np.nan) for f in file_of])
    lag = (done.reindex(ids).to_numpy() - visible) * 1000
    return lag, np.array([rank[int(f)] for f in file_of], dtype="int64"), len(files)


def fixed_point(staged: Staged, side: str, mode: str, obs: Observed) -> Point:
    """A capacity or latency point (one file per micro-batch)."""
    if obs.failure or len(obs.got) < staged.events:
        raise RuntimeError(f"{staged.app}/{side}/{mode}: {obs.failure or f'{len(obs.got)} of {staged.events}'}")
    wrong = check(staged, obs.got)
    done = obs.got.set_index(staged.id_column)["done_at"]
    first = done.min()
    later = done[done > first]
    # events/s: the value barrier's output counts the values each barrier closes
    events_after = sum(staged.weights[i] for i in later.index) if staged.weights else len(later)
    rate = events_after / (done.max() - first) if len(later) else float("nan")
    lag, rank, _ = _lags_ms(staged, obs)
    lat = lag[rank > 0] if mode == "latency" else lag[np.isfinite(lag)]
    return Point(
        staged.app,
        side,
        mode,
        staged.events,
        round(rate, 1),
        round(float(np.percentile(lat, 50)), 1) if len(lat) else float("nan"),
        round(float(np.percentile(lat, 99)), 1) if len(lat) else float("nan"),
        round(done.max() - obs.began, 2),
        wrong == 0,
        wrong,
        round(obs.load, 2),
        obs.phases,
        batch_rows=obs.batch_rows,
        jvm_cores=obs.jvm_cores,
        machine_busy=obs.machine_busy,
        cpu_by_thread=obs.cpu_by_thread,
    )


def rate_point(staged: Staged, side: str, rate: float, mode: str, obs: Observed, args: Args) -> Point:
    """A sustained-mode point at `rate`: complete, equal to the oracle, p99 lag within bound and the
    lag not growing from the second quarter of the files to the last."""
    complete = obs.failure is None and len(obs.got) >= staged.events
    wrong = check(staged, obs.got, present_only=not complete)  # a point cut short: what came out
    lag, rank, files = _lags_ms(staged, obs)
    quarter = rank * 4 // max(files, 1)
    steady = lag[quarter >= 1]
    p50 = float(np.percentile(steady, 50)) if len(steady) else float("nan")
    p99 = float(np.percentile(steady, 99)) if len(steady) else float("nan")
    q2 = float(np.median(lag[quarter == 1])) if (quarter == 1).any() else float("nan")
    q4 = float(np.median(lag[quarter == 3])) if (quarter == 3).any() else float("nan")
    sustained = complete and wrong == 0 and p99 <= args.max_p99_ms and q4 <= 500 + 1.25 * q2
    events = sum(staged.weights.values()) if staged.weights else staged.events
    fed = max(obs.visible.values()) - min(obs.visible.values()) + args.pace_rate if obs.visible else float("nan")
    done = obs.got["done_at"]
    return Point(
        staged.app,
        side,
        mode,
        staged.events,
        round(events / fed, 1),
        round(p50, 1),
        round(p99, 1),
        round(float(done.max() - obs.began), 2) if len(done) else float("nan"),
        wrong == 0,
        int(wrong),
        round(obs.load, 2),
        obs.phases,
        rate=rate,
        offered_per_s=round(events / fed, 1),
        sustained=bool(sustained),
        lag_q2_ms=round(q2, 1),
        lag_q4_ms=round(q4, 1),
        batch_rows=obs.batch_rows,
        jvm_cores=obs.jvm_cores,
        machine_busy=obs.machine_busy,
        cpu_by_thread=obs.cpu_by_thread,
    )


def search(run_at, start: float, precision: float, floor: float = 125.0, ceiling: float = 2_048_000.0) -> float | None:
    """The highest sustained rate: doubling from `start` while sustained (halving while not), then
    bisecting (geometric mean) until the best sustained and the lowest failed rate are within `precision`."""
    best = failed = None
    rate = start
    while floor <= rate <= ceiling:
        if run_at(rate):
            best = rate
            if failed is not None:
                break
            rate *= 2
        else:
            failed = rate
            if best is not None:
                break
            rate /= 2
    while best is not None and failed is not None and failed / best > precision:
        rate = round(math.sqrt(best * failed))
        if run_at(rate):
            best = rate
        else:
            failed = rate
    return best


def summarize(points: list[dict]) -> dict:
    """Per application, side and mode: capacity/latency medians with min-max; sustained: the best
    sustained rate of each run, their median and min-max, and the latency at the common rate."""
    out: dict = {}
    for app in APPS:
        for side in SIDES:
            for mode in FIXED_MODES:
                ps = [p for p in points if (p["app"], p["side"], p["mode"]) == (app, side, mode)]
                if not ps:
                    continue
                key = "events_per_s" if mode == "capacity" else "p99_ms"
                vals = [p[key] for p in ps]
                out.setdefault(app, {}).setdefault(side, {})[mode] = {
                    "metric": key,
                    "median": statistics.median(vals),
                    "min": min(vals),
                    "max": max(vals),
                    "p50_ms_median": statistics.median(p["p50_ms"] for p in ps),
                    "all_correct": all(p["correct"] for p in ps),
                    "points": len(ps),
                }
            search_ps = [p for p in points if (p["app"], p["side"]) == (app, side) and p["mode"] == "rate"]
            common = [p for p in points if (p["app"], p["side"]) == (app, side) and p["mode"] == "common"]
            if not search_ps and not common:
                continue
            best = {}
            for run in sorted({p["run"] for p in search_ps + common}):
                ok = [p for p in search_ps + common if p["run"] == run and p["sustained"]]
                top = max(ok, key=lambda p: p["offered_per_s"]) if ok else None
                best[run] = top
            rates = [b["offered_per_s"] if b else 0.0 for b in best.values()]
            out.setdefault(app, {}).setdefault(side, {})["sustained"] = {
                "metric": "best sustained events/s per run",
                "per_run": rates,
                "median": statistics.median(rates),
                "min": min(rates),
                "max": max(rates),
                "batch_rows_at_best": [b["batch_rows"] if b else None for b in best.values()],
                "jvm_cores_at_best": [b.get("jvm_cores") if b else None for b in best.values()],
                "machine_busy_at_best": [b.get("machine_busy") if b else None for b in best.values()],
                "common_rate": common[0]["rate"] if common else None,
                "common_sustained": [p["sustained"] for p in common],
                "common_p50_ms": statistics.median(p["p50_ms"] for p in common) if common else None,
                "common_p99_ms": statistics.median(p["p99_ms"] for p in common) if common else None,
                "common_p99_min": min(p["p99_ms"] for p in common) if common else None,
                "common_p99_max": max(p["p99_ms"] for p in common) if common else None,
                "all_correct": all(p["correct"] for p in search_ps + common),
                "wrong_points": sum(1 for p in search_ps + common if not p["correct"]),
                "points": len(search_ps) + len(common),
            }
    return out


def ratios_of(summary: dict) -> dict:
    ratios = {}
    for app, by_side in summary.items():
        mode = "sustained" if any("sustained" in m for m in by_side.values()) else "capacity"
        cap = {side: m[mode] for side, m in by_side.items() if mode in m}
        if not {"sharedstate-1", "sharedstate-2"} <= set(cap):
            continue
        one, two, peer = cap["sharedstate-1"], cap["sharedstate-2"], cap.get("spark-peer")
        r = {"mode": mode, "two_over_one": _ratio(two["median"], one["median"])}
        r["peer_ran"] = peer is not None
        r["two_over_peer"] = _ratio(two["median"], peer["median"]) if peer else None
        if mode == "sustained":
            r["two_over_one_per_run"] = [_ratio(b, a) for a, b in zip(one["per_run"], two["per_run"])]
            r["machine_bound"] = machine_bound(one)
        ratios[app] = r
    return ratios


def machine_bound(one_partition: dict) -> float | None:
    """The most 2 partitions can give over 1 on this machine at equal CPU per event, however well they
    scale: 1 / the share of the machine busy (every process, every core) at 1 partition's best
    sustained rate (median over the runs). At 78% busy, 2 partitions have 1 / 0.78 = 1.28x the CPU to
    spend; beyond that only less CPU per event (bigger micro-batches spreading Spark's per-batch work)."""
    busy = [b for b in one_partition.get("machine_busy_at_best", []) if b]
    return 1 / statistics.median(busy) if busy else None


def _ratio(a: float, b: float) -> float | None:
    """a / b; None when b sustained no rate at all (0)."""
    return a / b if b else None


def _x(r: float | None) -> str:
    return "-" if r is None else f"{r:.2f}x"


def table(doc: dict) -> str:
    s = doc["summary"]
    m = doc["meta"]
    lines = [
        "# Partial States: fraud detection, value barrier, BSP online learning, collaborative filtering",
        "",
        f"Command: `{m['command']}`. {m['runs']} runs. "
        f"Machine: {os.cpu_count()} cores, shared; load average at the points {m['load_min']}-{m['load_max']}. "
        "A side with P partitions runs every stage of every query with P tasks; the peer with "
        f"{m['peer_partitions']}. Every point's output is checked against the sequential oracle.",
        "",
    ]
    sustained = {app: by for app, by in s.items() if any("sustained" in x for x in by.values())}
    fixed = {app: by for app, by in s.items() if any(k in x for x in by.values() for k in FIXED_MODES)}
    if sustained:
        lines += [
            f"**Sustained rate** (every file visible when a micro-batch starts is in it; one file per stream "
            f"every {m['pace_rate_s']} s for {m['feed_s']} s; sustained: complete, equal to the oracle, p99 lag <= "
            f"{m['max_p99_ms']:,.0f} ms, lag not growing). Best sustained events/s per run, median (min-max); "
            "rows per micro-batch of the first query at the best rate; p50/p99 lag at the common rate.",
            "",
            "| application | side | sustained events/s | per run | rows per batch at best | JVM cores at best "
            "(machine busy) | common rate | p50 ms | p99 ms | points | equal to the oracle |",
            "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        ]
        for app, by_side in sustained.items():
            for side, x in by_side.items():
                c = x.get("sustained")
                if not c:
                    continue
                per = ", ".join(f"{v:,.0f}" for v in c["per_run"])
                rows = ", ".join("-" if r is None else f"{r:,.0f}" for r in c["batch_rows_at_best"])
                cores = ", ".join(
                    "-" if x is None else f"{x:.2f} ({b:.0%})"
                    for x, b in zip(c.get("jvm_cores_at_best", []), c.get("machine_busy_at_best", []))
                )
                p50 = "-" if c["common_p50_ms"] is None else f"{c['common_p50_ms']:,.0f}"
                p99 = "-" if c["common_p99_ms"] is None else f"{c['common_p99_ms']:,.0f}"
                ok = "yes" if c["wrong_points"] == 0 else f"NO ({c['wrong_points']} points)"
                lines.append(
                    f"| {app} | {side} | {c['median']:,.0f} ({c['min']:,.0f}-{c['max']:,.0f}) | {per} | {rows} | "
                    f"{cores} | {c['common_rate'] or 0:,.0f}/s | {p50} | {p99} | {c['points']} | {ok} |"
                )
        lines.append("")
    if fixed:
        lines += [
            "**Capacity and latency** (one file per micro-batch). Capacity: a fixed load (every file visible at "
            "once), events/s after the first output batch. Latency: one file per stream every "
            f"{m['pace_s']} s, output batch done - file visible. Medians with min-max.",
            "",
            "| application | side | capacity events/s | latency p50 ms | latency p99 ms | points | "
            "equal to the oracle |",
            "| --- | --- | --- | --- | --- | --- | --- |",
        ]
        for app, by_side in fixed.items():
            for side, x in by_side.items():
                c, lat = x.get("capacity"), x.get("latency")
                if not c and not lat:
                    continue
                cap = f"{c['median']:,.0f} ({c['min']:,.0f}-{c['max']:,.0f})" if c else "-"
                p99 = f"{lat['median']:,.0f} ({lat['min']:,.0f}-{lat['max']:,.0f})" if lat else "-"
                p50 = f"{lat['p50_ms_median']:,.0f}" if lat else "-"
                ok = all(x[k]["all_correct"] for k in FIXED_MODES if k in x)
                n = "/".join(str(x[k]["points"]) if k in x else "0" for k in FIXED_MODES)
                lines.append(f"| {app} | {side} | {cap} | {p50} | {p99} | {n} | {'yes' if ok else 'NO'} |")
        lines.append("")
    lines += [
        "| application | measure | 2 partitions / 1 partition | per run "
        "| most this machine allows at equal CPU per event | sharedstate-2 / spark-peer | targets | met |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for app, r in doc["ratios"].items():
        scaled = app in SCALING_APPS
        two_one, two_peer = r["two_over_one"], r["two_over_peer"]
        peer_ran = r.get("peer_ran", True)
        met = (not scaled or (two_one or 0) >= 1.8) and peer_ran and (two_peer is None or two_peer >= 5)
        targets = ">= 1.8x, >= 5x" if scaled else ">= 5x"
        per = ", ".join(_x(v) for v in r.get("two_over_one_per_run", []))
        peer = (
            "not run" if not peer_ran else _x(two_peer) if two_peer is not None else "the peer sustained no rate tried"
        )
        lines.append(
            f"| {app} | {r['mode']} | {_x(two_one)} | {per or '-'} | {_x(r.get('machine_bound'))} | {peer} "
            f"| {targets} | {'yes' if met else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def plot(doc: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("sustained", "median", "sustained events/s (best per run)", False)]
    panels += [("capacity", "median", "capacity events/s (one file per batch)", False)]
    panels += [("latency", "median", "latency p99 ms (one file per batch)", True)]
    panels = [p for p in panels if any(p[0] in x for by in doc["summary"].values() for x in by.values())]
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4), squeeze=False)
    for ax, (key, stat, title, log) in zip(axes[0], panels):
        apps = [a for a, by in doc["summary"].items() if any(key in x for x in by.values())]
        width = 0.25
        for j, side in enumerate(SIDES):
            vals = [doc["summary"][a].get(side, {}).get(key, {}) for a in apps]
            med = [v.get(stat, 0) for v in vals]
            err = [[m - v.get("min", m) for m, v in zip(med, vals)], [v.get("max", m) - m for m, v in zip(med, vals)]]
            ax.bar([i + (j - 1) * width for i in range(len(apps))], med, width, yerr=err, label=side, capsize=3)
        ax.set_xticks(range(len(apps)), apps)
        ax.set_title(title)
        if log:
            ax.set_yscale("log")
    axes[0][0].legend()
    fig.suptitle("Partial States at 1 and 2 partitions vs a Spark user's foreachBatch recomputation (median, min-max)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def report(points: list[dict], args, sizes: dict, runs: int, argv: list[str] | None) -> dict:
    """Writes partial.json, table.md, command.txt and plot.png from the points; returns the document."""
    summary = summarize(points)
    given = list(argv if argv is not None else sys.argv[1:])
    if "--report-from" in given:  # the command that ran the points
        at = given.index("--report-from")
        del given[at : at + 2]
    command = ".venv/bin/python benchmarks/partial/bench_partial.py " + shlex.join(given)
    doc = {
        "meta": {
            "command": command,
            "runs": runs,
            "sizes": sizes,
            "pace_s": args.pace,
            "pace_rate_s": args.pace_rate,
            "feed_s": args.feed,
            "max_p99_ms": args.max_p99,
            "precision": args.precision,
            "peer_partitions": args.peer_partitions,
            "trigger": sides.TRIGGER,
            "master": "local[4]",
            "nproc": os.cpu_count(),
            "load_min": min(p["load"] for p in points),
            "load_max": max(p["load"] for p in points),
        },
        "points": points,
        "summary": summary,
        "ratios": ratios_of(summary),
    }
    (args.out / "partial.json").write_text(json.dumps(doc, indent=1))
    (args.out / "table.md").write_text(table(doc))
    (args.out / "command.txt").write_text(command + "\n")
    plot(doc, args.out / "plot.png")
    return doc


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--first-run",
        type=int,
        default=0,
        help="number the runs (and seed them) from here: runs split over invocations",
    )
    parser.add_argument("--quick", action="store_true", help="tiny workloads, one run: a smoke test")
    parser.add_argument(
        "--large", action="store_true", help="capacity/latency: fraud and barrier at issue 25's size (10K per rule)"
    )
    parser.add_argument("--pace", type=float, default=1.0, help="seconds between files in the latency points")
    parser.add_argument("--pace-rate", type=float, default=0.25, help="sustained: seconds between files")
    parser.add_argument("--feed", type=float, default=20.0, help="sustained: seconds of input per point")
    parser.add_argument("--max-p99", type=float, default=10_000.0, help="sustained: p99 lag bound, ms")
    parser.add_argument("--abort-after", type=float, default=15.0, help="sustained: seconds after the last file")
    parser.add_argument("--precision", type=float, default=1.2, help="sustained: search until best/failed within")
    parser.add_argument("--start-rates", default="", help="sustained: app=events/s,... (default START_RATE)")
    parser.add_argument(
        "--common-rates", default="", help="sustained: app=events/s,... (default COMMON_RATE; none: no common point)"
    )
    parser.add_argument(
        "--rates",
        default="",
        help="sustained: run these rates instead of a search (400,800 or fraud=4000/8000,barrier=...)",
    )
    parser.add_argument("--retries", type=int, default=1, help="sustained: runs again a correct point that fell behind")
    parser.add_argument("--peer-partitions", type=int, default=2)
    parser.add_argument(
        "--driver-memory", default="6g", help="the benchmark JVM's heap (local mode: the tasks run in it)"
    )
    parser.add_argument("--apps", default=",".join(APPS))
    parser.add_argument("--sides", default=",".join(SIDES))
    parser.add_argument("--modes", default="", help="sustained, capacity, latency (default: DEFAULT_MODES per app)")
    parser.add_argument("--scratch", type=Path, default=None)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--jfr", type=Path, default=None, help="record the JVM with JFR into this file (jfr_split.py)")
    parser.add_argument("--event-log", type=Path, default=None, help="write Spark's event log (uncompressed) here")
    parser.add_argument(
        "--report-from", type=Path, default=None, help="a log of this runner: its point lines, reported without running"
    )
    args = parser.parse_args(argv)
    sizes = QUICK if args.quick else LARGE if args.large else FULL
    runs = 1 if args.quick else args.runs
    args.out.mkdir(parents=True, exist_ok=True)
    if args.report_from is not None:
        lines = args.report_from.read_text().splitlines()
        points = [json.loads(line) for line in lines if line.startswith('{"run"')]
        print(table(report(points, args, sizes.__dict__, 1 + max(p["run"] for p in points), argv)))
        return 0 if all(p["correct"] for p in points) else 1
    scratch = args.scratch or Path(tempfile.mkdtemp(prefix="partial-bench-"))
    if args.quick:  # a smoke test: short feeds, a fixed rate
        args.feed, args.rates, args.retries = min(args.feed, 4.0), args.rates or "400", 0
    point_args = Args(
        scratch,
        args.timeout,
        args.pace,
        args.pace_rate,
        args.feed,
        args.max_p99,
        args.abort_after,
        args.peer_partitions,
    )
    start_rates = {**START_RATE, **_rates(args.start_rates)}
    common_rates = {} if args.common_rates == "none" else {**COMMON_RATE, **_rates(args.common_rates)}
    conf = {"spark.sql.shuffle.partitions": "2", "spark.sql.streaming.numRecentProgressUpdates": "2000"}
    if args.jfr is not None:
        from sharedstate.session import conf_file

        record = f"-XX:StartFlightRecording=filename={args.jfr.resolve()},settings=profile"
        logs = f"-Dlog4j2.configurationFile=file:{conf_file('log4j2.properties')}"
        conf["spark.driver.extraJavaOptions"] = f"{record} {logs}"
    if args.event_log is not None:
        args.event_log.mkdir(parents=True, exist_ok=True)
        conf["spark.eventLog.enabled"] = "true"
        conf["spark.eventLog.dir"] = args.event_log.resolve().as_uri()
        conf["spark.eventLog.compress"] = "false"
    conf["spark.driver.memory"] = args.driver_memory
    spark = ss.session("sharedstate-partial-bench", master="local[4]", **conf)
    spark.sparkContext.setLogLevel("ERROR")
    point_args.jvm_pid = jvm_pid(spark)
    cache = scratch / "staged"
    stagers = {"fraud": stage_fraud, "barrier": stage_barrier, "learning": stage_learning, "cf": stage_cf}
    points: list[dict] = []
    warmed: set = set()
    n = 0

    def emit(p: Point, run: int) -> dict:
        d = {"run": run, **p.__dict__}
        print(json.dumps(d), flush=True)
        points.append(d)
        return d

    try:
        for run in range(args.first_run, args.first_run + runs):
            for app in args.apps.split(","):
                modes = args.modes.split(",") if args.modes else DEFAULT_MODES[app]
                fixed = [m for m in modes if m in FIXED_MODES]
                staged = stagers[app](cache, sizes, seed=11 + run) if fixed else None
                for side in args.sides.split(","):
                    for mode in fixed:
                        n += 1
                        obs = observe(spark, staged, side, mode, point_args, f"{os.getpid()}_{n}")
                        emit(fixed_point(staged, side, mode, obs), run)
                    if "sustained" not in modes:
                        continue
                    if app not in SCALING_APPS:
                        raise SystemExit(f"--modes sustained: only {sorted(SCALING_APPS)} have sustained workloads")

                    def run_at(rate: float, mode: str = "rate", app=app, side=side, run=run) -> bool:
                        nonlocal n
                        staged = stage_rate(app, cache, rate, args.feed, args.pace_rate, seed=11 + run)
                        for attempt in range(1 + args.retries):
                            n += 1
                            obs = observe(spark, staged, side, "sustained", point_args, f"{os.getpid()}_{n}")
                            p = rate_point(staged, side, rate, mode, obs, point_args)
                            # a correct point that fell behind runs again (a one-off stall of a shared
                            # machine); the last attempt decides, earlier ones stay in the JSON as retried
                            last = p.sustained or not p.correct or attempt == args.retries or mode == "warmup"
                            emit(p if last else replace(p, mode=f"{mode}-retried"), run)
                            if last:
                                return bool(p.sustained)
                        return False

                    kind = (app, side.split("-")[0])
                    if kind not in warmed:  # a fresh JVM's first queries of a kind: run, not measured
                        warmed.add(kind)
                        saved, args.feed = args.feed, min(args.feed, 6.0)
                        run_at(common_rates.get(app, COMMON_RATE[app]), "warmup")
                        args.feed = saved
                    if app in common_rates:
                        run_at(common_rates[app], "common")
                    if args.rates:
                        for rate in _app_rates(args.rates, app):
                            run_at(rate)
                    else:
                        tried = [p for p in points if (p["run"], p["app"], p["mode"]) == (run, app, "rate")]
                        ok = [p["rate"] for p in tried if p["sustained"] and p["side"].startswith("sharedstate")]
                        # sharedstate-2 starts where sharedstate-1 ended (fewer points); the peer at the common rate
                        peer_start = common_rates.get(app, COMMON_RATE[app])
                        start = peer_start if side == "spark-peer" else max(ok or [start_rates[app]])
                        search(run_at, start, args.precision)
    finally:
        spark.stop()
        if args.scratch is None:
            shutil.rmtree(scratch, ignore_errors=True)
    doc = report(points, args, sizes.__dict__, runs, argv)
    print(table(doc))
    return 0 if all(p["correct"] for p in points) else 1


def _rates(text: str) -> dict[str, float]:
    return {k: float(v) for k, v in (item.split("=") for item in text.split(",") if item)}


def _app_rates(text: str, app: str) -> list[float]:
    """`400,800` (every application) or `fraud=4000/8000,barrier=16000` (per application)."""
    if "=" not in text:
        return [float(x) for x in text.split(",") if x]
    per = dict(item.split("=") for item in text.split(",") if item)
    return [float(x) for x in per.get(app, "").split("/") if x]


if __name__ == "__main__":
    sys.exit(main())
