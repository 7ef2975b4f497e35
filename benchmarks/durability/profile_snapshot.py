"""Where one snapshot round's time goes: a durable State of K keys (local mode), one round under
Java Flight Recorder started with the JVM (as benchmarks/adcamp/profile_method.py does, so the JIT
is not disturbed mid-run), CPU samples of the round's window by bucket, and the round's lock waits.

    .venv/bin/python benchmarks/durability/profile_snapshot.py --keys 1000000 [--rounds 2]

K keys are loaded once; each round after the first follows a change of K/1000 keys (every partition
has a journal event since, so every round is full, as the benchmark's is). The first rounds warm the
JIT; the profiled one is the last, or the first with `--profile-round first` (the benchmark's
round). Retention is off (`snapshot.retained` = 100), so the window is the snapshot part only. Prints one JSON object.
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import tempfile
import time
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent

# A sample lands in the first bucket whose marker is anywhere in its stack (checked in order).
BUCKETS = [
    ("capture under the commit lock (PartitionCapture, fallback path)", ["PartitionCapture$.of"]),
    ("compress (zstd)", ["com.github.luben.zstd"]),
    ("Kernel Parquet write", ["io.delta.kernel.defaults.internal.parquet", "org.apache.parquet"]),
    ("Kernel commit / log replay", ["io.delta.kernel"]),
    (
        "snapshot pass: walk + encode (SnapshotPass, EntryWriter)",
        ["SnapshotPass", "EntryWriter", "BigEndianBlocks", "SnapshotCodec", "CodecIO", "KeyTable"],
    ),
    (
        "retention (Snapshotter.retain; Delta-Spark before 2026-11-30)",
        ["Snapshotter.retain", "org.apache.spark.sql.delta"],
    ),
    ("other sharedstate", ["io.sharedstate."]),
    ("other (Spark, py4j, JVM)", []),
]


def _epoch_s(start_time: str) -> float:
    return datetime.fromisoformat(re.sub(r"(\.\d{6})\d+", r"\1", start_time)).timestamp()


def _events(recording: Path, kind: str, since: float, until: float) -> list[dict]:
    raw = subprocess.run(
        ["jfr", "print", "--json", "--stack-depth", "200", "--events", kind, str(recording)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    events = json.loads(raw)["recording"]["events"]
    return [e for e in events if since <= _epoch_s(e["values"]["startTime"]) <= until]


def _stack(event: dict) -> str:
    trace = event["values"].get("stackTrace")
    frames = trace["frames"] if trace else []
    return "\n".join(f"{f['method']['type']['name']}.{f['method']['name']}" for f in frames).replace("/", ".")


def _duration_ms(event: dict) -> float:
    d = event["values"]["duration"]  # e.g. "PT0.012345S"
    return float(d[2:-1]) * 1000.0 if d.startswith("PT") and d.endswith("S") else 0.0


def profile(recording: Path, since: float, until: float) -> dict:
    counts: collections.Counter[str] = collections.Counter()
    threads: collections.Counter[str] = collections.Counter()
    for e in _events(recording, "jdk.ExecutionSample", since, until):
        stack = _stack(e)
        for name, markers in BUCKETS:
            if not markers or any(m in stack for m in markers):
                counts[name] += 1
                break
        threads[e["values"]["sampledThread"]["javaName"]] += 1
    total = sum(counts.values()) or 1
    waits: collections.defaultdict[str, float] = collections.defaultdict(float)
    for kind in ("jdk.JavaMonitorEnter", "jdk.ThreadPark"):
        for e in _events(recording, kind, since, until):
            stack = _stack(e)
            if "io.sharedstate." not in stack:
                continue
            where = "commit lock" if "underCommitLock" in stack else "other sharedstate wait"
            waits[f"{where} ({kind.split('.')[-1]})"] += _duration_ms(e)
    gc = sum(_duration_ms(e) for e in _events(recording, "jdk.GarbageCollection", since, until))
    return {
        "samples": total,
        "cpu_percent": {name: round(100.0 * counts[name] / total, 1) for name, _ in BUCKETS if counts[name]},
        "samples_per_thread": dict(threads.most_common(8)),
        "wait_ms": {k: round(v, 1) for k, v in waits.items()},
        "gc_pause_ms": round(gc, 1),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--keys", type=int, default=1_000_000)
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--driver-memory", default="6g")
    p.add_argument(
        "--profile-round",
        choices=["first", "last"],
        default="last",
        help="the round profiled: the first (cold JIT, what the benchmark times) or the last (warm)",
    )
    args = p.parse_args()

    from pyspark.sql import functions as F

    import sharedstate as ss

    scratch = Path(tempfile.mkdtemp(prefix="snapshot-profile-"))
    recording = scratch / "rec.jfr"
    java_opts = (
        "-XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints "
        f"-XX:StartFlightRecording=name=snap,settings={HERE / 'snapshot-profile.jfc'},maxage=30m"
    )
    spark = ss.session(
        "snapshot-profile",
        master="local[2]",
        **{
            "spark.driver.memory": args.driver_memory,
            "spark.driver.extraJavaOptions": java_opts,
            "spark.ui.enabled": "false",
            "spark.sharedstate.snapshot.interval": "0",
            "spark.sharedstate.snapshot.fullEvery": "1",
            "spark.sharedstate.snapshot.retained": "100",
        },
    )
    spark.sparkContext.setLogLevel("ERROR")
    st = ss.State.create(
        spark, "kv", key="k BIGINT", value="v BIGINT", partitions=args.partitions, root=str(scratch / "root")
    )
    rounds = []
    windows = []
    for r in range(args.rounds):
        df = spark.range(args.keys if r == 0 else args.keys // 1000).select(
            F.col("id").alias("k"),
            (F.col("id") * 31 % 1_000_003 + r).alias("v"),
            F.timestamp_micros(F.lit(1_700_000_000_000_000 + r * 60_000_000) + F.col("id") % 1000).alias("ts"),
        )
        df.write.format("sharedstate").mode("append").option("state", "kv").option("key", "k").option(
            "time", "ts"
        ).option("value", "v").save()
        since = time.time()
        result = st.snapshot()
        until = time.time()
        rounds.append({"wall_s": round(until - since, 3), "round": result})
        windows.append((since, until))
    pid = str(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    subprocess.run(["jcmd", pid, "JFR.dump", "name=snap", f"filename={recording}"], check=True, capture_output=True)
    spark.stop()
    import os

    out = {
        "keys": args.keys,
        "partitions": args.partitions,
        "load_avg": os.getloadavg(),
        "rounds": rounds,
        "profiled_round": args.profile_round,
        "profile": profile(recording, *windows[0 if args.profile_round == "first" else -1]),
    }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
