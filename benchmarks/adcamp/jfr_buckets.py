"""Where CPU samples go in a JFR recording of a benchmark JVM (`jdk.ExecutionSample`), by bucket.

    .venv/bin/python benchmarks/adcamp/jfr_buckets.py rec.jfr

A sample lands in the first bucket whose marker appears anywhere in its stack (checked in order),
so "plugin fetch join" means time spent under FetchJoinTask or FetchJoinExec, whatever they called
(reading the events included; the sink's write, which pulls rows from the join, is not under them).
"""

from __future__ import annotations

import collections
import json
import re
import subprocess
import sys
from datetime import datetime

BUCKETS = [
    ("plugin fetch join (package fetch)", ["io.sharedstate.spark.fetch."]),
    ("plugin update write / commit", ["io.sharedstate.spark.write."]),
    ("plugin engine (other)", ["io.sharedstate."]),
    ("state store (load/commit/checkpoint files)", ["org.apache.spark.sql.execution.streaming.state."]),
    ("Delta log / commit / snapshot", ["org.apache.spark.sql.delta.", "io.delta."]),
    ("process fork (Hadoop local FS readlink on rename)", ["java.lang.ProcessImpl", "org.apache.hadoop.util.Shell"]),
    ("parquet read/write", ["org.apache.parquet.", "ParquetFileFormat", "VectorizedParquet"]),
    ("shuffle", ["org.apache.spark.shuffle.", "ShuffleExchange", "UnsafeShuffleWriter", "ShuffleBlockFetcher"]),
    (
        "query planning / analysis / codegen",
        [
            "org.apache.spark.sql.catalyst.analysis.",
            "org.apache.spark.sql.catalyst.optimizer.",
            "org.codehaus.janino",
            "QueryExecution",
            "SparkPlanner",
            "CodeGenerator",
        ],
    ),
    (
        "task (de)serialization / scheduling",
        ["java.io.ObjectInputStream", "java.io.ObjectOutputStream", "org.apache.spark.scheduler.", "JavaSerializer"],
    ),
    ("streaming engine (offsets, file source listing, progress)", ["org.apache.spark.sql.execution.streaming."]),
    ("py4j / Python gateway", ["py4j."]),
    ("GC / JIT / other JVM", []),
]


def buckets(recording: str, since: float | None = None) -> dict[str, float]:
    """Percent of the samples per bucket, counting only samples taken at or after `since` (epoch seconds)."""
    raw = subprocess.run(
        ["jfr", "print", "--json", "--stack-depth", "200", "--events", "jdk.ExecutionSample", recording],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    events = json.loads(raw)["recording"]["events"]
    if since is not None:
        events = [e for e in events if _epoch_s(e["values"]["startTime"]) >= since]
    counts: collections.Counter[str] = collections.Counter()
    for event in events:
        frames = event["values"]["stackTrace"]["frames"] if event["values"].get("stackTrace") else []
        names = [f"{f['method']['type']['name']}.{f['method']['name']}" for f in frames]
        stack = "\n".join(names).replace("/", ".")
        for name, markers in BUCKETS:
            if not markers or any(m in stack for m in markers):
                counts[name] += 1
                break
    total = sum(counts.values()) or 1
    return {name: round(100.0 * counts[name] / total, 1) for name, _ in BUCKETS if counts[name]} | {"samples": total}


def _epoch_s(start_time: str) -> float:
    # jfr prints e.g. "2026-11-22T21:39:04.306211234Z" (or an offset); Python reads at most microseconds
    return datetime.fromisoformat(re.sub(r"(\.\d{6})\d+", r"\1", start_time)).timestamp()


if __name__ == "__main__":
    print(json.dumps(buckets(sys.argv[1]), indent=1))
