"""Where a method's time goes at one point: Spark's batch phases plus a JFR CPU profile of the JVM.

    .venv/bin/python benchmarks/adcamp/profile_method.py --method sharedstate --update-rate 1000 --event-rate 1400

Runs the method twice at the point (the first run warms the JVM up and is discarded), records the
second with Java Flight Recorder, and prints the CPU samples per bucket (jfr_buckets.py) and the
mean batch phases per query. Writes profile-<method>-<u>-<e>.json into --out.

The recording starts with the JVM (`cpu-samples.jfc`) and only the second run's samples count: a
recording started on a warm JVM (`jcmd JFR.start`) sets the JIT recompiling for half a minute (about
1.2 compiler threads busy at 100K updates/s), so the recorded run fell behind at rates it otherwise
sustains.
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

import sharedstate as ss
from harness import Settings, run_point
from jfr_buckets import buckets
from redis_server import RedisServer
from run import METHODS, session_conf
from sharedstate._jars import conf_file
from workload import Shape

HERE = Path(__file__).resolve().parent


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--method", choices=sorted(METHODS), default="sharedstate")
    p.add_argument("--update-rate", type=int, default=1000)
    p.add_argument("--event-rate", type=int, default=1000)
    p.add_argument("--seconds", type=float, default=12)
    p.add_argument("--out", type=Path, default=Path("benchmarks/results/adcamp"))
    p.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "adcamp-bench-cache")
    args = p.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="adcamp-profile-"))
    recording = scratch / "rec.jfr"
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYTHONPATH"] = os.pathsep.join(x for x in (str(HERE), os.environ.get("PYTHONPATH")) if x)
    # DebugNonSafepoints: samples land on the method that ran, not the nearest safepoint
    java_opts = (
        f"-Dlog4j2.configurationFile=file:{conf_file('log4j2.properties')} "
        "-XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints "
        f"-XX:StartFlightRecording=name=adcamp,settings={HERE / 'cpu-samples.jfc'},maxage=30m"
    )
    spark = ss.session(
        "adcamp-profile", master="local[4]", **session_conf(), **{"spark.driver.extraJavaOptions": java_opts}
    )
    spark.sparkContext.setLogLevel("ERROR")
    redis_server = RedisServer(str(scratch)) if args.method == "redis" else None
    settings = Settings(
        cache=args.cache,
        scratch=scratch,
        trigger="250 milliseconds",
        lag_cap_s=20,
        startup_cap_s=60,
        redis_port=redis_server.port if redis_server else None,
    )
    shape = Shape(update_rate=args.update_rate, event_rate=args.event_rate, seconds=args.seconds, tail_s=6)
    run_point(spark, METHODS[args.method], shape, settings)  # warm-up
    pid = str(spark.sparkContext._jvm.java.lang.ProcessHandle.current().pid())

    def jcmd(*command: str) -> None:
        subprocess.run(["jcmd", pid, *command], check=True, capture_output=True, timeout=120)

    began = time.time()
    result = run_point(spark, METHODS[args.method], shape, settings)
    jcmd("JFR.dump", "name=adcamp", f"filename={recording}")
    profile = {
        "method": result.method,
        "update_rate": args.update_rate,
        "event_rate": args.event_rate,
        "recorded_s": round(time.time() - began, 1),
        "load_avg_1m": os.getloadavg()[0],
        "sustained": result.sustained,
        "p50_ms": result.p50_ms,
        "p99_ms": result.p99_ms,
        "cpu_samples_percent": buckets(str(recording), since=began),
        "batch_phases": result.progress,
    }
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"profile-{args.method}-u{args.update_rate}-e{args.event_rate}.json"
    path.write_text(json.dumps(profile, indent=1))
    print(json.dumps(profile, indent=1))
    if redis_server:
        redis_server.stop()
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
