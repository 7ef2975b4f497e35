"""Where a partial-benchmark run's CPU goes, from a JFR recording of its driver JVM (local mode: the
executors' tasks run there too): `bench_partial.py --jfr rec.jfr`, then

    .venv/bin/python benchmarks/partial/jfr_split.py rec.jfr

Each execution sample is ours when a sharedstate frame (io.sharedstate) is on its stack, else it
goes to the package of its top frame (Spark, Parquet, the JDK...). Prints the split, the split by
thread (the queries' driver threads by query role: what runs once per micro-batch, one at a time;
executor tasks: what P partitions spread; the State's parallel appliers; the rest), what each
query's driver thread does (our commit, our planning, Spark's), and the sharedstate methods and top
frames that take the most samples."""

from __future__ import annotations

import collections
import re
import subprocess
import sys

FRAME = re.compile(r"^\s+([\w$.<>]+)\(")
# "stream execution thread for writer_123_4 [id = ..., runId = ...]": the role is the name before the uid
QUERY = re.compile(r"stream execution thread for (?:([a-z]+)_[\d_]+ )?\[")

# What a driver thread's sample is doing: the first pattern (in this order) that a frame of its stack matches.
DRIVER_WORK = [
    (
        "sharedstate: commit, admit and apply (State.commitEpoch)",
        re.compile(r"io\.sharedstate\.core\.State\..*commitEpoch"),
    ),
    ("sharedstate: fetch join's batch bounds and plan", re.compile(r"io\.sharedstate\.spark\.fetch")),
    ("sharedstate: other", re.compile(r"io\.sharedstate")),
    ("Spark: checkpoint files (offset, commit logs)", re.compile(r"CheckpointFileManager|HDFSMetadataLog")),
    (
        "Spark: planning and optimizing",
        re.compile(r"org\.apache\.spark\.sql\.(catalyst|execution\.(SparkStrategies|QueryExecution))"),
    ),
    ("Spark: waiting for the micro-batch's job", re.compile(r"org\.apache\.spark\.scheduler")),
    ("Spark: other", re.compile(r"org\.apache\.spark")),
]


def samples(path: str):
    out = subprocess.run(
        ["jfr", "print", "--events", "jdk.ExecutionSample", "--stack-depth", "96", path],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    stack: list[str] | None = None
    thread = ""
    for line in out.splitlines():
        if "sampledThread" in line:
            thread = line.split("=", 1)[1].strip()
        elif "stackTrace = [" in line:
            stack = []
        elif stack is not None:
            if line.strip() in ("]", "...") or line.strip().startswith("]"):
                if line.strip().startswith("]"):
                    yield thread, stack
                    stack = None
                continue
            m = FRAME.match(line)
            if m:
                stack.append(m.group(1))


def family(frame: str) -> str:
    parts = frame.split(".")
    if frame.startswith("org.apache."):
        return ".".join(parts[:3])
    return ".".join(parts[:2])


def thread_kind(thread: str) -> str:
    if "Executor task launch" in thread:
        return "executor task"
    m = QUERY.search(thread)
    if m:
        return f"driver: {m.group(1) or 'unnamed query'}"
    if "ForkJoinPool.commonPool" in thread:
        return "common pool (State appliers)"
    return "other"


def driver_work(stack: list[str]) -> str:
    for label, pattern in DRIVER_WORK:
        if any(pattern.match(frame) for frame in stack):
            return label
    return "JDK and other"


def main(path: str) -> None:
    split: collections.Counter = collections.Counter()
    ours: collections.Counter = collections.Counter()
    tops: collections.Counter = collections.Counter()
    threads: collections.Counter = collections.Counter()
    work: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    others: collections.Counter = collections.Counter()
    total = 0
    for thread, stack in samples(path):
        if not stack:
            continue
        total += 1
        tops[stack[0]] += 1
        kind = thread_kind(thread)
        first = next((f for f in stack if f.startswith("io.sharedstate")), None)
        threads[kind] += 1
        if kind.startswith("driver"):
            work[kind][driver_work(stack)] += 1
        elif kind == "other":
            others[re.sub(r"[-\d]+$", "", thread.strip('"').split(" (")[0])] += 1
        if first:
            split["io.sharedstate (anywhere on the stack)"] += 1
            ours[first] += 1
        else:
            split[family(stack[0])] += 1
    print(f"{total} execution samples")
    for what, counter in (("split", split), ("by thread", threads)):
        print(f"\n{what}:")
        for k, n in counter.most_common(14):
            print(f"  {100 * n / total:5.1f}%  {k}")
    print("\nthe queries' driver threads (one per query, one micro-batch at a time), by what they do:")
    for kind, counter in sorted(work.items(), key=lambda kv: -sum(kv[1].values())):
        print(f"  {kind}: {100 * sum(counter.values()) / total:.1f}%")
        for k, n in counter.most_common(8):
            print(f"      {100 * n / total:5.1f}%  {k}")
    print("\nother threads:")
    for k, n in others.most_common(8):
        print(f"  {100 * n / total:5.1f}%  {k}")
    print("\nsharedstate frames nearest the top:")
    for k, n in ours.most_common(15):
        print(f"  {100 * n / total:5.1f}%  {k}")
    print("\ntop frames:")
    for k, n in tops.most_common(15):
        print(f"  {100 * n / total:5.1f}%  {k}")


if __name__ == "__main__":
    main(sys.argv[1])
