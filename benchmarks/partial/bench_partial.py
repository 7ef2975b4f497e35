"""Partial States on Spark (issue 25): the DGS fraud-detection / value-barrier pipeline and BSP online
learning, each on sharedstate at 1 and 2 writer partitions beside what a Spark user writes today
(sides.py), in one Spark application. See benchmarks/README.md.

    .venv/bin/python benchmarks/partial/bench_partial.py --out benchmarks/results/partial --runs 3
    .venv/bin/python benchmarks/partial/bench_partial.py --out /tmp/partial-quick --quick     # tiny, one run

Applications: fraud (DGS fraud detection), barrier (DGS value barrier: fraud's first two queries,
the barriers' aggregates as the output), learning (BSP online learning), cf (SDG collaborative
filtering). Per run, application and side, two points, each with fresh queries and States:
- capacity: every input file visible at once (a fixed load); events/s = the checked events after
  the first output batch over the time from that batch to the last (query start-up left out);
- latency: one file per stream every `--pace` seconds (the same offered rate for every side); p50 /
  p99 of (output batch done - the event's file visible).
Each side's output is checked against the application's sequential oracle (every point).
The JSON has every point; table.md the medians over runs with min-max; plot.png the capacity.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
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
)

from sharedstate.demos.fraud import comparable  # noqa: E402
from sharedstate.testing.arrivals import SECOND  # noqa: E402

SIDES = ["sharedstate-1", "sharedstate-2", "spark-peer"]
APPS = ["fraud", "barrier", "learning", "cf"]
# the applications whose 2-partition target is 1.8x (issue 25: value barrier and fraud detection)
SCALING_APPS = {"fraud", "barrier"}
MODES = ["capacity", "latency"]


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


class Feeder(threading.Thread):
    """Hard-links file i of every stream into its live directory at start + i * pace (all at once,
    in order, when pace is 0) and records when each file of the measured stream became visible."""

    def __init__(self, staged: Staged, live: dict[str, Path], pace: float):
        super().__init__(name="partial-feeder", daemon=True)
        self.staged, self.live, self.pace = staged, live, pace
        self.visible: dict[int, float] = {}
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


def check(staged: Staged, got: pd.DataFrame) -> int:
    """How many checked events differ from the oracle (missing, duplicated or wrong)."""
    if staged.app == "fraud":
        want = fraud_expected(staged.work)
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


def run_point(spark, staged: Staged, side: str, mode: str, pace: float, scratch: Path, uid: str, timeout: float):
    work = scratch / f"point-{uid}"
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
    lateness_s = staged.work.lateness_s
    load = os.getloadavg()[0]
    if side.startswith("sharedstate"):
        partitions = int(side.rsplit("-", 1)[1])
        start = {
            "fraud": sides.sharedstate_fraud,
            "barrier": sides.sharedstate_barrier,
            "learning": sides.sharedstate_learning,
            "cf": sides.sharedstate_cf,
        }[staged.app]
        queries = start(spark, live, work, uid, partitions, f"{lateness_s} seconds", rec)
    elif staged.app in ("fraud", "barrier"):
        queries = sides.peer_fraud(
            spark, live, work, staged.work.real_tx, lateness_s * SECOND, rec, barriers_only=staged.app == "barrier"
        )
    elif staged.app == "cf":
        queries = sides.peer_cf(spark, live, work, lateness_s * SECOND, rec)
    else:
        queries = sides.peer_learning(spark, live, work, lateness_s * SECOND, rec)
    feeder = Feeder(staged, live, pace if mode == "latency" else 0.0)
    began = time.time()
    feeder.start()
    failure = None
    try:
        while rec.rows() < staged.events:
            for q in queries:
                if q.exception() is not None:
                    failure = str(q.exception())
            if failure or time.time() - began > timeout:
                break
            time.sleep(0.2)
    finally:
        feeder.stop()
        phases = {}
        for i, q in enumerate(queries):
            progress = [p for p in q.recentProgress if p["numInputRows"] > 0]
            sums: dict = {"batches": len(progress)}
            for p in progress:
                for k, v in p["durationMs"].items():
                    sums[k] = sums.get(k, 0) + v
            phases[f"q{i}"] = sums
        for q in queries:
            q.stop()
        for name in ss.State.names(spark):  # States live as long as the application
            if name.endswith(uid):
                ss.State.get(spark, name).drop()
    got = per_id(staged, rec.result())
    shutil.rmtree(work, ignore_errors=True)
    if failure or len(got) < staged.events:
        raise RuntimeError(f"{staged.app}/{side}/{mode}: {failure or f'{len(got)} of {staged.events} in {timeout}s'}")
    wrong = check(staged, got)
    file_of = {i: f for f, ids in enumerate(staged.measured_ids) for i in ids}
    done = got.set_index(staged.id_column)["done_at"]
    first = done.min()
    later = done[done > first]
    # events/s: the value barrier's output counts the values each barrier closes
    events_after = sum(staged.weights[i] for i in later.index) if staged.weights else len(later)
    rate = events_after / (done.max() - first) if len(later) else float("nan")
    lat = np.array([done[i] - feeder.visible[file_of[i]] for i in done.index if file_of[i] > 0]) * 1000
    return Point(
        staged.app,
        side,
        mode,
        staged.events,
        round(rate, 1),
        round(float(np.percentile(lat, 50)), 1) if len(lat) else float("nan"),
        round(float(np.percentile(lat, 99)), 1) if len(lat) else float("nan"),
        round(done.max() - began, 2),
        wrong == 0,
        wrong,
        round(load, 2),
        phases,
    )


def summarize(points: list[dict]) -> dict:
    out: dict = {}
    for app in APPS:
        for side in SIDES:
            for mode in MODES:
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
    return out


def table(doc: dict) -> str:
    s = doc["summary"]
    lines = [
        "# Partial States: fraud detection, value barrier, BSP online learning, collaborative filtering",
        "",
        f"Command: `{doc['meta']['command']}`. {doc['meta']['runs']} runs; medians with min-max over the points "
        "(capacity/latency points per cell in `points`). "
        f"Capacity: a fixed load (every file visible at once), events/s after the first output batch. "
        f"Latency: one file per stream every {doc['meta']['pace_s']} s, output batch done - file visible. "
        f"Machine: {os.cpu_count()} cores, shared; load average at the points {doc['meta']['load_min']}-"
        f"{doc['meta']['load_max']}. Every point's output is checked against the sequential oracle.",
        "",
        "| application | side | capacity events/s | latency p50 ms | latency p99 ms | points | equal to the oracle |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for app, by_side in s.items():
        for side, m in by_side.items():
            c, lat = m.get("capacity"), m.get("latency")
            cap = f"{c['median']:,.0f} ({c['min']:,.0f}-{c['max']:,.0f})" if c else "-"
            p99 = f"{lat['median']:,.0f} ({lat['min']:,.0f}-{lat['max']:,.0f})" if lat else "-"
            p50 = f"{lat['p50_ms_median']:,.0f}" if lat else "-"
            ok = all(x["all_correct"] for x in m.values())
            n = "/".join(str(m[k]["points"]) if k in m else "0" for k in MODES)
            lines.append(f"| {app} | {side} | {cap} | {p50} | {p99} | {n} | {'yes' if ok else 'NO'} |")
    lines += [
        "",
        "| application | 2 partitions / 1 partition | sharedstate-2 / spark-peer | targets | met |",
        "| --- | --- | --- | --- | --- |",
    ]
    for app, r in doc["ratios"].items():
        scaled = app in SCALING_APPS
        met = (r["two_over_one"] >= 1.8 or not scaled) and r["two_over_peer"] >= 5
        targets = ">= 1.8x, >= 5x" if scaled else ">= 5x"
        lines.append(
            f"| {app} | {r['two_over_one']:.2f}x | {r['two_over_peer']:.2f}x | {targets} | {'yes' if met else 'no'} |"
        )
    return "\n".join(lines) + "\n"


def plot(doc: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(12, 4))
    for ax, (key, title) in zip(axes, [("capacity", "capacity, events/s"), ("latency", "latency p99, ms")]):
        apps = list(doc["summary"])
        width = 0.25
        for j, side in enumerate(SIDES):
            vals = [doc["summary"][a].get(side, {}).get(key, {}) for a in apps]
            med = [v.get("median", 0) for v in vals]
            err = [[m - v.get("min", m) for m, v in zip(med, vals)], [v.get("max", m) - m for m, v in zip(med, vals)]]
            ax.bar([i + (j - 1) * width for i in range(len(apps))], med, width, yerr=err, label=side, capsize=3)
        ax.set_xticks(range(len(apps)), apps)
        ax.set_title(title)
        if key == "latency":
            ax.set_yscale("log")
    axes[0].legend()
    fig.suptitle("Partial States vs a Spark user's foreachBatch recomputation (median, min-max)")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def report(points: list[dict], args, sizes: dict, runs: int, argv: list[str] | None) -> dict:
    """Writes partial.json, table.md, command.txt and plot.png from the points; returns the document."""
    summary = summarize(points)
    ratios = {}
    for app, by_side in summary.items():
        cap = {side: m["capacity"]["median"] for side, m in by_side.items() if "capacity" in m}
        if {"sharedstate-1", "sharedstate-2", "spark-peer"} <= set(cap):
            ratios[app] = {
                "two_over_one": cap["sharedstate-2"] / cap["sharedstate-1"],
                "two_over_peer": cap["sharedstate-2"] / cap["spark-peer"],
            }
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
            "trigger": sides.TRIGGER,
            "master": "local[4]",
            "nproc": os.cpu_count(),
            "load_min": min(p["load"] for p in points),
            "load_max": max(p["load"] for p in points),
        },
        "points": points,
        "summary": summary,
        "ratios": ratios,
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
    parser.add_argument("--quick", action="store_true", help="tiny workloads, one run: a smoke test")
    parser.add_argument(
        "--large", action="store_true", help="fraud and barrier at issue 25's size (about 10K transactions per rule)"
    )
    parser.add_argument("--pace", type=float, default=1.0, help="seconds between files in the latency points")
    parser.add_argument("--apps", default=",".join(APPS))
    parser.add_argument("--sides", default=",".join(SIDES))
    parser.add_argument("--modes", default=",".join(MODES), help="capacity, latency or both")
    parser.add_argument("--scratch", type=Path, default=None)
    parser.add_argument("--timeout", type=float, default=600)
    parser.add_argument("--jfr", type=Path, default=None, help="record the JVM with JFR into this file (jfr_split.py)")
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
    conf = {"spark.sql.shuffle.partitions": "2"}
    if args.jfr is not None:
        from sharedstate.session import conf_file

        record = f"-XX:StartFlightRecording=filename={args.jfr.resolve()},settings=profile"
        logs = f"-Dlog4j2.configurationFile=file:{conf_file('log4j2.properties')}"
        conf["spark.driver.extraJavaOptions"] = f"{record} {logs}"
    spark = ss.session("sharedstate-partial-bench", master="local[4]", **conf)
    spark.sparkContext.setLogLevel("ERROR")
    cache = scratch / "staged"
    stagers = {"fraud": stage_fraud, "barrier": stage_barrier, "learning": stage_learning, "cf": stage_cf}
    points: list[dict] = []
    n = 0
    try:
        for run in range(runs):
            for app in args.apps.split(","):
                staged = stagers[app](cache, sizes, seed=11 + run)
                for side in args.sides.split(","):
                    for mode in args.modes.split(","):
                        n += 1
                        p = run_point(spark, staged, side, mode, args.pace, scratch, f"{os.getpid()}_{n}", args.timeout)
                        d = {"run": run, **p.__dict__}
                        print(json.dumps(d), flush=True)
                        points.append(d)
    finally:
        spark.stop()
        if args.scratch is None:
            shutil.rmtree(scratch, ignore_errors=True)
    doc = report(points, args, sizes.__dict__, runs, argv)
    print(table(doc))
    return 0 if all(p["correct"] for p in points) else 1


if __name__ == "__main__":
    sys.exit(main())
