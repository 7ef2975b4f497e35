"""One provider's Spark application, run by `compare_providers.py` in its own process (a fresh JVM per phase).
Prints one JSON line per event (`EVENT {...}`) on stdout.

    python provider_process.py <phase> <provider> <work dir> <sizes json>

Phases:
  steady   each query in turn from an empty checkpoint for its number of batches, then stopped: every
           batch's progress, the state operators' memory, the JVM's RSS and the checkpoint's bytes; then
           all three restarted together from their checkpoints and left running (`crash-ready` once each
           ran a batch) for `compare_providers.py` to kill the process group with SIGKILL mid-batch.
  restart  all three restarted together from the checkpoints the kill left: per query, the seconds from
           its `start()` to the end of its first batch (the batch the kill interrupted, run again).
"""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import datetime
from pathlib import Path

from queries import BUILDERS, PROVIDERS, QUERIES, Sizes


def emit(kind: str, **fields) -> None:
    print("EVENT " + json.dumps({"event": kind, **fields}), flush=True)


def session(provider: str, partitions: int):
    import sharedstate as ss

    conf = {
        "spark.sql.shuffle.partitions": str(partitions),
        "spark.driver.memory": os.environ.get("STATESTORE_BENCH_DRIVER_MEMORY", "3g"),
        "spark.ui.enabled": "false",
        **PROVIDERS[provider],
    }
    spark = ss.session(f"statestore-bench-{provider}", master="local[2]", **conf)
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def rss(pid: int) -> dict:
    """The JVM's resident set now and at its peak (kB lines of /proc/<pid>/status), in bytes."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = int(value.split()[0]) * 1024
    return out


def du(path: Path) -> int:
    total = 0
    for f in path.rglob("*"):
        # A stopped query's last task or the provider's maintenance thread may still rename or delete
        # a temp file between the listing and its stat: it is no longer part of the checkpoint.
        try:
            if f.is_file():
                total += f.stat().st_size
        except FileNotFoundError:
            continue
    return total


def as_dict(progress) -> dict:
    return json.loads(progress.json) if hasattr(progress, "json") else dict(progress)


def end_ms(p: dict) -> float:
    """Wall-clock end of a batch: its trigger's start (`timestamp`) plus `triggerExecution`."""
    start = datetime.fromisoformat(p["timestamp"].replace("Z", "+00:00")).timestamp() * 1000
    return start + p["durationMs"]["triggerExecution"]


def brief(p: dict) -> dict:
    ops = p.get("stateOperators") or []
    return {
        "batchId": p["batchId"],
        "timestamp": p["timestamp"],
        "durationMs": p["durationMs"],
        "numInputRows": p["numInputRows"],
        "stateOperators": [
            {k: op.get(k) for k in ("operatorName", "numRowsTotal", "numRowsUpdated", "memoryUsedBytes")} for op in ops
        ],
        "customMetrics": [op.get("customMetrics", {}) for op in ops],
    }


def start(spark, query: str, sizes: Sizes, work: Path):
    writer = BUILDERS[query](spark, sizes)
    return writer.format("noop").option("checkpointLocation", str(work / query)).queryName(query).start()


def wait_batches(q, n: int, timeout_s: float = 900) -> list[dict]:
    """Progress of the query's batches until n of them completed (rate-micro-batch always has data)."""
    deadline = time.monotonic() + timeout_s
    while True:
        if q.exception() is not None:
            raise RuntimeError(f"query {q.name} failed: {q.exception()}")
        done = [as_dict(p) for p in q.recentProgress if as_dict(p)["numInputRows"] > 0]
        if len(done) >= n:
            return done
        if time.monotonic() > deadline:
            raise TimeoutError(f"query {q.name}: {len(done)} of {n} batches in {timeout_s} s")
        time.sleep(0.05)


def steady(spark, jvm_pid: int, sizes: Sizes, work: Path) -> None:
    for query in QUERIES:
        q = start(spark, query, sizes, work)
        done = wait_batches(q, sizes.batches(query))
        q.stop()
        last = done[-1]
        emit(
            "steady",
            query=query,
            batches=[brief(p) for p in done],
            state_memory_bytes=sum(op.get("memoryUsedBytes") or 0 for op in last.get("stateOperators") or []),
            state_rows=sum(op.get("numRowsTotal") or 0 for op in last.get("stateOperators") or []),
            rss=rss(jvm_pid),
            checkpoint_bytes=du(work / query),
            state_dir_bytes=du(work / query / "state"),
        )
    # the crash: all three queries running again from their checkpoints, for compare_providers.py to kill
    running = [start(spark, query, sizes, work) for query in QUERIES]
    for q in running:
        wait_batches(q, 1)
    emit("crash-ready", rss=rss(jvm_pid))
    time.sleep(3600)  # killed by compare_providers.py


def restart(spark, jvm_pid: int, sizes: Sizes, work: Path) -> None:
    begun = {}
    running = []
    for query in QUERIES:
        begun[query] = time.time() * 1000
        running.append(start(spark, query, sizes, work))
    for q in running:
        first = wait_batches(q, 1)[0]
        emit(
            "recovered",
            query=q.name,
            recovery_ms=end_ms(first) - begun[q.name],
            first_batch=brief(first),
        )
    for q in running:
        q.stop()
    emit(
        "restart-done",
        rss=rss(jvm_pid),
        checkpoint_bytes={query: du(work / query) for query in QUERIES},
    )


def main(argv: list[str]) -> int:
    phase, provider, work, sizes_json = argv
    sizes = Sizes(**json.loads(sizes_json))
    work = Path(work)
    t = time.perf_counter()
    spark = session(provider, sizes.partitions)
    jvm_pid = int(spark.sparkContext._jvm.ProcessHandle.current().pid())
    emit("started", jvm_pid=jvm_pid, session_s=time.perf_counter() - t, rss=rss(jvm_pid))
    {"steady": steady, "restart": restart}[phase](spark, jvm_pid, sizes, work)
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
