"""Where a JMH benchmark's CPU samples go, from a JFR recording started with its JVM.

    python benchmarks/jmh/jfr_top.py rec.jfr [--only SUBSTRING] [--top N]

Record by starting JFR with the forked benchmark JVM (as benchmarks/adcamp/profile_method.py does
for Spark, so the JIT is not disturbed by a late start), e.g.

    bin/sbt "bench/Jmh/run -wi 2 -i 3 -f 1 -w 2s -r 2s -p impl=engine \
      -jvmArgsAppend '-XX:+UnlockDiagnosticVMOptions -XX:+DebugNonSafepoints \
      -XX:StartFlightRecording=filename=/tmp/fetch.jfr,settings=$PWD/benchmarks/adcamp/cpu-samples.jfc' \
      io.sharedstate.bench.state.FetchLatestBenchmark"

Prints the share of samples per top frame (self time) and per method anywhere on the stack (total
time), for the samples whose stack contains `--only` (default: every sample).
"""

from __future__ import annotations

import argparse
import collections
import json
import subprocess


def frames(recording: str):
    out = subprocess.run(
        ["jfr", "print", "--json", "--events", "jdk.ExecutionSample", recording],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    for event in json.loads(out)["recording"]["events"]:
        stack = event["values"]["stackTrace"]
        if stack is None:
            continue
        yield [
            f"{f['method']['type']['name']}.{f['method']['name']}:{f.get('lineNumber', -1)}" for f in stack["frames"]
        ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("recording")
    parser.add_argument("--only", default="")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    self_time: collections.Counter[str] = collections.Counter()
    total: collections.Counter[str] = collections.Counter()
    n = 0
    for stack in frames(args.recording):
        if args.only and not any(args.only in f for f in stack):
            continue
        n += 1
        self_time[stack[0]] += 1
        for method in {f.rsplit(":", 1)[0] for f in stack}:
            total[method] += 1
    print(f"{n} samples")
    print("\nself (top frame, with line):")
    for f, c in self_time.most_common(args.top):
        print(f"  {100 * c / n:5.1f}%  {f}")
    print("\ntotal (anywhere on the stack):")
    for f, c in total.most_common(args.top):
        print(f"  {100 * c / n:5.1f}%  {f}")


if __name__ == "__main__":
    main()
