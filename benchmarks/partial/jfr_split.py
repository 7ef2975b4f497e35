"""Where a partial-benchmark run's CPU goes, from a JFR recording of its driver JVM (local mode: the
executors' tasks run there too): `bench_partial.py --jfr rec.jfr`, then

    .venv/bin/python benchmarks/partial/jfr_split.py rec.jfr

Each execution sample is ours when a sharedstate frame (io.sharedstate) is on its stack, else it
goes to the package of its top frame (Spark, Parquet, the JDK...). Prints the split and the
sharedstate methods and top frames that take the most samples."""

from __future__ import annotations

import collections
import re
import subprocess
import sys

FRAME = re.compile(r"^\s+([\w$.<>]+)\(")


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


def main(path: str) -> None:
    split: collections.Counter = collections.Counter()
    ours: collections.Counter = collections.Counter()
    tops: collections.Counter = collections.Counter()
    threads: collections.Counter = collections.Counter()
    total = 0
    for thread, stack in samples(path):
        if not stack:
            continue
        total += 1
        tops[stack[0]] += 1
        kind = "task" if "Executor task launch" in thread else "stream" if "stream execution" in thread else "other"
        first = next((f for f in stack if f.startswith("io.sharedstate")), None)
        if first:
            split["io.sharedstate (anywhere on the stack)"] += 1
            ours[first] += 1
            threads[f"{kind}: ours"] += 1
        else:
            split[family(stack[0])] += 1
            threads[f"{kind}: not ours"] += 1
    print(f"{total} execution samples")
    for what, counter in (("split", split), ("thread kind", threads)):
        print(f"\n{what}:")
        for k, n in counter.most_common(14):
            print(f"  {100 * n / total:5.1f}%  {k}")
    print("\nsharedstate frames nearest the top:")
    for k, n in ours.most_common(15):
        print(f"  {100 * n / total:5.1f}%  {k}")
    print("\ntop frames:")
    for k, n in tops.most_common(15):
        print(f"  {100 * n / total:5.1f}%  {k}")


if __name__ == "__main__":
    main(sys.argv[1])
