"""Snapshot time and recovery time of a durable State at 1M+ keys, beside Spark's RocksDB state store
with changelog checkpointing on the same keyed input, in the same run (see benchmarks/README.md).

    .venv/bin/python benchmarks/durability/snapshot_recovery.py --keys 1000000,10000000 \\
        --out benchmarks/results/durability/snapshot-recovery

`--repeat N` runs each key count N times in a row (table.md then leads with the median and the
spread, min to max, of each compared number over the runs); `--append` adds the runs to those already
in `--out`, so the runs of one table can be split over several holds of the benchmark lock.

Per key count, each phase is a fresh Spark application (local[2]; driver 6 GB up to 2M keys, 12 GB above):
  stage          K rows (k BIGINT, v BIGINT, ts) and a tail of K/10 updates of other values, a minute later
  ss-load        bulk load K rows into a durable State (4 partitions), a snapshot round, bulk load the tail
  ss-recover     State.get in a new application: snapshot + changelog tail, partitions in parallel
  rocks-load     streaming `max_by(v, ts)` per k over the K rows, RocksDB provider, changelog checkpointing,
                 a snapshot at that commit (spark.sql.streaming.stateStore.minDeltasForSnapshot=1): flushed
                 and checkpointed in the commit, zipped and uploaded by the maintenance task (every 200 ms);
                 timed from the batch's end until every partition's 1.zip is there
  rocks-tail     restart (loads the snapshot), the tail as the next batch: changelog only (minDeltasForSnapshot=1000)
  rocks-recover  restart with a 4-row probe batch: its first batch loads each partition from the snapshot
                 and replays the tail's changelog (checked: rocksdbNumReplayChangelogFiles = partitions)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from phases import TAIL_FRACTION
from report import write_report

HERE = Path(__file__).resolve().parent


def _phase(name: str, work: Path, keys: int, partitions: int, memory: str, log) -> dict:
    load = os.getloadavg()
    t = time.perf_counter()
    # Output to files and the phase in a process group of its own: a phase's Spark JVM sometimes stays
    # alive, idle, for minutes after its Python process has printed its result and exited (seen in
    # rocks-load at 10M keys); waiting on its pipes waited for it too. It is ended once the phase has.
    with tempfile.TemporaryFile("w+") as stdout, tempfile.TemporaryFile("w+") as stderr:
        proc = subprocess.Popen(
            [sys.executable, str(HERE / "phases.py"), name, str(work), str(keys), str(partitions), memory],
            stdout=stdout,
            stderr=stderr,
            text=True,
            start_new_session=True,
        )
        returncode = proc.wait()
        wall = time.perf_counter() - t
        lingered = _end_group(proc.pid)
        stdout.seek(0)
        stderr.seek(0)
        proc_stdout, proc_stderr = stdout.read(), stderr.read()
    lines = [line for line in proc_stdout.splitlines() if line.startswith("RESULT ")]
    if returncode or not lines:
        raise RuntimeError(f"phase {name} failed ({returncode}):\n{proc_stderr[-4000:]}")
    out = json.loads(lines[-1][len("RESULT ") :])
    if name == "rocks-recover":
        out["rocksdb_load"] = rocksdb_loads(proc_stderr)
        if len(out["rocksdb_load"]["partitions"]) < partitions or not all(
            p["changelogs_replayed"] for p in out["rocksdb_load"]["partitions"].values()
        ):
            raise RuntimeError(
                f"rocks-recover did not load every partition from a snapshot plus its changelog: {out['rocksdb_load']}"
            )
    out["process_wall_s"] = wall
    out["jvm_lingered"] = lingered
    out["load_avg_before"] = load
    out["load_avg_after"] = os.getloadavg()
    log(
        f"  {name:<14} {wall:6.1f}s process; load {load[0]:.1f} -> {out['load_avg_after'][0]:.1f}: "
        + json.dumps({k: v for k, v in out.items() if k.endswith("_s") or k == "keys"})
    )
    return out


def _end_group(pgid: int, grace_s: float = 30.0) -> bool:
    """Waits up to `grace_s` for what is left of the phase's process group (its JVM) to exit, then kills it.
    True if something was still there after the grace."""
    until = time.monotonic() + grace_s
    while time.monotonic() < until:
        try:
            os.killpg(pgid, 0)
        except ProcessLookupError:
            return False
        time.sleep(0.5)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        return False
    return True


_LOG_LINE = re.compile(r"^(\d\d):(\d\d):(\d\d)\.(\d{3}) INFO RocksDB .*partitionId=(\d+),.*?\]: (.*)$")


def rocksdb_loads(stderr: str) -> dict:
    """Per partition, from RocksDB's INFO lines: the first load's seconds ("Loading v" to "Loaded v") and
    the changelog versions it replayed on top of the snapshot; and the wall from the first start to the last end."""
    parts: dict[str, dict] = {}
    for line in stderr.splitlines():
        m = _LOG_LINE.match(line)
        if not m:
            continue
        h, mi, se, ms, part, msg = m.groups()
        t = int(h) * 3600 + int(mi) * 60 + int(se) + int(ms) / 1000
        p = parts.setdefault(part, {"start": None, "end": None, "changelogs_replayed": 0, "snapshot_version": None})
        if p["end"] is not None:
            continue  # the second load (the save operator's) of the same version is a no-op
        if msg.startswith("Loading ") and p["start"] is None:
            p["start"] = t
        elif msg.startswith("Replaying changelog from version "):
            p["snapshot_version"] = int(msg.split()[4])
        elif msg.startswith("replaying changelog from version "):
            p["changelogs_replayed"] += 1
        elif msg.startswith("Loaded ") and p["start"] is not None:
            p["end"] = t
    done = {k: v for k, v in parts.items() if v["start"] is not None and v["end"] is not None}
    for v in done.values():
        v["load_s"] = v["end"] - v["start"]
    return {
        "partitions": done,
        "wall_s": max(v["end"] for v in done.values()) - min(v["start"] for v in done.values()) if done else None,
        "max_s": max((v["load_s"] for v in done.values()), default=None),
    }


def _link(src: Path, dst: Path) -> None:
    dst.mkdir(parents=True, exist_ok=True)
    for f in src.glob("*.parquet"):
        os.link(f, dst / f"{src.name}-{f.name}")


def expected_sample(keys: int) -> dict[str, int]:
    """The newest value of keys 0..19 after load + tail (the tail maps id -> (id * 7919) % keys, a bijection)."""
    exp = {k: k * 31 % 1_000_003 for k in range(20)}
    inv = pow(7919, -1, keys)
    for k in range(20):
        i = k * inv % keys
        if i < keys // TAIL_FRACTION:
            exp[k] = i + 7
    return {str(k): v for k, v in exp.items()}


def driver_memory(keys: int, given: str | None) -> str:
    """The driver heap: the State lives there in local mode (about 0.5 GB per million keys with
    snapshot and recovery buffers)."""
    return given or ("6g" if keys <= 2_000_000 else "12g")


def run_size(keys: int, partitions: int, scratch: Path, memory: str | None, skip_rocks: bool, log) -> dict:
    work = scratch / f"k{keys}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    memory = driver_memory(keys, memory)
    log(f"{keys:,} keys (driver memory {memory})")
    r = {"keys": keys, "partitions": partitions, "tail_updates": keys // TAIL_FRACTION, "driver_memory": memory}
    r["stage"] = _phase("stage", work, keys, partitions, memory, log)
    r["ss_load"] = _phase("ss-load", work, keys, partitions, memory, log)
    r["ss_recover"] = _phase("ss-recover", work, keys, partitions, memory, log)
    r["ss_correct"] = r["ss_recover"]["sample"] == expected_sample(keys) and r["ss_recover"]["keys"] == keys
    if skip_rocks:
        shutil.rmtree(work, ignore_errors=True)
        return r
    _link(work / "input" / "load", work / "rocks-src")
    r["rocks_load"] = _phase("rocks-load", work, keys, partitions, memory, log)
    _link(work / "input" / "tail", work / "rocks-src")
    r["rocks_tail"] = _phase("rocks-tail", work, keys, partitions, memory, log)
    if r["rocks_tail"]["snapshot_zips"]:
        raise RuntimeError(
            "rocks-tail took a RocksDB snapshot of the tail's version: recovery would not replay a changelog"
        )
    _link(work / "input" / "probe", work / "rocks-src")
    r["rocks_recover"] = _phase("rocks-recover", work, keys, partitions, memory, log)
    shutil.rmtree(work, ignore_errors=True)
    return r


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--keys", default="1000000")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()))
    p.add_argument("--driver-memory", help="driver heap of every phase (default: 6g up to 2M keys, 12g above)")
    p.add_argument("--skip-rocks", action="store_true", help="only the sharedstate phases")
    p.add_argument("--repeat", type=int, default=1, help="runs per key count (median and spread in table.md)")
    p.add_argument(
        "--no-delta-rounds",
        action="store_true",
        help="skip the two delta rounds after the recovery (they are not part of the compared numbers)",
    )
    p.add_argument(
        "--append",
        action="store_true",
        help="add these runs to the ones already in --out (so runs can be split over several lock holds)",
    )
    args = p.parse_args(argv)
    if args.no_delta_rounds:
        os.environ["DURABILITY_BENCH_DELTA_ROUNDS"] = "0"  # read by phases.py ss-recover
    args.out.mkdir(parents=True, exist_ok=True)
    command = " ".join(
        shlex.quote(a) for a in [".venv/bin/python", "benchmarks/durability/snapshot_recovery.py", *argv]
    )
    previous = args.out / "snapshot_recovery.json"
    earlier = json.loads(previous.read_text()) if args.append and previous.exists() else None
    with (args.out / "command.txt").open("a" if earlier else "w") as f:
        f.write(command + "\n")
    scratch = Path(tempfile.mkdtemp(prefix="durability-bench-", dir=args.scratch))
    log_file = (args.out / "log.txt").open("a" if earlier else "w")

    def log(msg: str) -> None:
        print(msg, flush=True)
        log_file.write(msg + "\n")
        log_file.flush()

    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    meta = {
        "command": command,
        "git_commit": commit,
        "cpus": os.cpu_count(),
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_avg_start": os.getloadavg(),
    }
    sizes = earlier["sizes"] if earlier else []
    # Each invocation's meta is kept (an appended run has its own commit, start and load).
    metas = (earlier.get("runs_meta") or [earlier["meta"]] if earlier else []) + [meta]

    def save() -> None:
        previous.write_text(json.dumps({"meta": metas[0], "runs_meta": metas, "sizes": sizes}, indent=1))

    try:
        for keys in (int(k) for k in args.keys.split(",")):
            done = sum(1 for s in sizes if s["keys"] == keys)
            for run in range(done, done + args.repeat):
                size = run_size(keys, args.partitions, scratch, args.driver_memory, args.skip_rocks, log)
                sizes.append({**size, "run": run, "git_commit": commit})
                save()
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    meta["load_avg_end"] = os.getloadavg()
    save()
    write_report(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
