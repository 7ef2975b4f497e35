"""What each query of a partial-benchmark run spent in its tasks, from Spark's event log
(`bench_partial.py --event-log DIR`), then

    .venv/bin/python benchmarks/partial/task_cpu.py DIR

Per query run (its name's role and the first characters of its id): the micro-batch jobs, their
summed wall time, and per stage index the task count, summed run time and summed CPU time (ms). The
task CPU is the part P partitions spread; a run time far above it is time a task waited (for a core
of a shared machine, for shuffle data)."""

from __future__ import annotations

import collections
import glob
import json
import os
import sys

QUERY_STARTED = "org.apache.spark.sql.streaming.StreamingQueryListener$QueryStartedEvent"


def event_file(path: str) -> str:
    if not os.path.isdir(path):
        return path
    files = sorted(glob.glob(os.path.join(path, "*", "events_*")) + glob.glob(os.path.join(path, "events_*")))
    if not files:
        raise SystemExit(f"no event log under {path}")
    return files[0]


def main(path: str) -> None:
    names: dict[str, str] = {}
    jobs: dict[int, dict] = {}
    tasks: dict[int, list[tuple[float, float]]] = collections.defaultdict(list)
    with open(event_file(path)) as f:
        for line in f:
            e = json.loads(line)
            kind = e["Event"]
            if kind == QUERY_STARTED:
                names[e["id"]] = e.get("name") or "unnamed"
            elif kind == "SparkListenerJobStart":
                query = e.get("Properties", {}).get("sql.streaming.queryId")
                jobs[e["Job ID"]] = {"start": e["Submission Time"], "query": query, "stages": e["Stage IDs"]}
            elif kind == "SparkListenerJobEnd":
                jobs[e["Job ID"]]["end"] = e["Completion Time"]
            elif kind == "SparkListenerTaskEnd":
                m = e.get("Task Metrics") or {}
                tasks[e["Stage ID"]].append((m.get("Executor Run Time", 0), m.get("Executor CPU Time", 0) / 1e6))
    per_query: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    for job in jobs.values():
        if "end" not in job or job["query"] is None:
            continue
        label = f"{names.get(job['query'], 'unnamed').split('_')[0]} {job['query'][:4]}"
        c = per_query[label]
        c["jobs"] += 1
        c["job wall ms"] += job["end"] - job["start"]
        for i, stage in enumerate(job["stages"]):
            c[f"stage {i} tasks"] += len(tasks.get(stage, []))
            c[f"stage {i} run ms"] += sum(t[0] for t in tasks.get(stage, []))
            c[f"stage {i} cpu ms"] += round(sum(t[1] for t in tasks.get(stage, [])))
    for label, c in per_query.items():
        print(label, " ".join(f"{k}={v}" for k, v in c.items()))


if __name__ == "__main__":
    main(sys.argv[1])
