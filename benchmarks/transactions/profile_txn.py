"""Where a method's time goes at one point of the Spark transaction benchmark: Spark's batch phases
plus a JFR CPU profile of the JVM.

    .venv/bin/python benchmarks/transactions/profile_txn.py --app SL --method sharedstate --rate 4000

Runs the point twice (the first run warms the JVM up and is discarded), records the second with Java
Flight Recorder started with the JVM (as benchmarks/adcamp/profile_method.py does: a recording
started on a warm JVM sets the JIT recompiling), and prints the CPU samples per bucket and the
query's batches (how many, with and without input, the mean of each phase). Writes
profile-<app>-<method>-<rate>.json into --out.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "adcamp"))

from bench_transactions import SAME_BATCH_COMMIT, SESSION_CONF, run_point  # noqa: E402
from txn_methods import METHODS  # noqa: E402

import jfr_buckets  # noqa: E402
import sharedstate as ss  # noqa: E402
from sharedstate._jars import conf_file  # noqa: E402

# Before adcamp's buckets (a sample lands in the first whose marker is on its stack): the
# transaction group's rounds (core), the operator's per-task staging and emission (spark.txn).
TXN_BUCKETS = [
    ("transaction rounds: chains, apply, publish (core.txn)", ["io.sharedstate.core.txn."]),
    ("transactional operator: stage, bound, emit (spark.txn)", ["io.sharedstate.spark.txn."]),
    ("plugin State engine (core, other)", ["io.sharedstate.core."]),
    ("Python foreachBatch callback (py4j)", ["py4j."]),
]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--app", default="SL")
    p.add_argument("--method", choices=sorted(METHODS), default="sharedstate")
    p.add_argument("--rate", type=int, default=4000)
    p.add_argument("--seconds", type=float, default=10)
    p.add_argument("--records", type=int, default=1000)
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/transactions"))
    p.add_argument("--no-same-batch-commit", dest="same_batch_commit", action="store_false")
    args = p.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="txn-profile-"))
    recording = scratch / "rec.jfr"
    java_opts = (
        f"-Dlog4j2.configurationFile=file:{conf_file('log4j2.properties')} "
        "-XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints "
        f"-XX:StartFlightRecording=name=txn,settings={HERE.parent / 'adcamp' / 'cpu-samples.jfc'},maxage=30m "
        f"-D{SAME_BATCH_COMMIT}={str(args.same_batch_commit).lower()}"
    )
    spark = ss.session("txn-profile", master="local[2]", **SESSION_CONF, **{"spark.driver.extraJavaOptions": java_opts})
    spark.sparkContext.setLogLevel("ERROR")
    redis = None
    if args.method == "redis":
        from redis_server import RedisServer

        redis = RedisServer(str(scratch))
    point = argparse.Namespace(
        seconds=args.seconds, records=args.records, lag_cap_s=20, scratch=str(scratch), run=1
    )  # fmt: skip
    port = redis.port if redis else None
    run_point(spark, args.method, args.app, args.rate, point, port, print)  # warm-up
    pid = str(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())
    began = time.time()
    result = run_point(spark, args.method, args.app, args.rate, point, port, print)
    subprocess.run(["jcmd", pid, "JFR.dump", "name=txn", f"filename={recording}"], check=True, capture_output=True)
    jfr_buckets.BUCKETS[:0] = TXN_BUCKETS
    profile = {
        "app": args.app,
        "method": args.method,
        "rate": args.rate,
        "same_batch_commit": args.same_batch_commit,
        "recorded_s": round(time.time() - began, 1),
        "load_avg_1m": os.getloadavg()[0],
        "sustained": result["sustained"],
        "verdict": result["verdict"],
        "p50_ms": result["p50_ms"],
        "p99_ms": result["p99_ms"],
        "cpu_samples_percent": jfr_buckets.buckets(str(recording), since=began),
        "batches": result["batches"],
    }
    args.out.mkdir(parents=True, exist_ok=True)
    suffix = "" if args.same_batch_commit else "-two-batch"
    path = args.out / f"profile-{args.app}-{args.method}-{args.rate}{suffix}.json"
    path.write_text(json.dumps(profile, indent=1) + "\n")
    print(json.dumps(profile, indent=1))
    if redis:
        redis.stop()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
