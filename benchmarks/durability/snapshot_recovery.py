"""Snapshot time and recovery time of a durable State at 1M+ keys, beside Spark's RocksDB state store
with changelog checkpointing on the same keyed input, in the same run (see benchmarks/README.md).

    .venv/bin/python benchmarks/durability/snapshot_recovery.py --keys 1000000,3000000 --out benchmarks/results/durability

Per key count, each phase is a fresh Spark application (local[2], driver 6 GB):
  stage          K rows (k BIGINT, v BIGINT, ts) and a tail of K/10 updates of other values, a minute later
  ss-load        bulk load K rows into a durable State (4 partitions), a snapshot round, bulk load the tail
  ss-recover     State.get in a new application: snapshot + changelog tail, partitions in parallel
  rocks-load     streaming `max_by(v, ts)` per k over the K rows, RocksDB provider, changelog checkpointing,
                 a snapshot at that commit (minDeltasForSnapshot=1), uploaded by the maintenance thread
  rocks-tail     restart, the tail as the next batch (changelog only: minDeltasForSnapshot=1000)
  rocks-recover  restart with a 4-row probe batch: its first batch loads snapshot + changelog
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from phases import TAIL_FRACTION  # noqa: E402
from report import write_report  # noqa: E402


def _phase(name: str, work: Path, keys: int, partitions: int, log) -> dict:
    load = os.getloadavg()
    t = time.perf_counter()
    proc = subprocess.run([sys.executable, str(HERE / "phases.py"), name, str(work), str(keys), str(partitions)],
                          capture_output=True, text=True)
    wall = time.perf_counter() - t
    lines = [l for l in proc.stdout.splitlines() if l.startswith("RESULT ")]
    if proc.returncode or not lines:
        raise RuntimeError(f"phase {name} failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    out = json.loads(lines[-1][len("RESULT "):])
    out["process_wall_s"] = wall
    out["load_avg_before"] = load
    out["load_avg_after"] = os.getloadavg()
    log(f"  {name:<14} {wall:6.1f}s process; load {load[0]:.1f} -> {out['load_avg_after'][0]:.1f}: "
        + json.dumps({k: v for k, v in out.items() if k.endswith('_s') or k == 'keys'}))
    return out


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


def run_size(keys: int, partitions: int, scratch: Path, log) -> dict:
    work = scratch / f"k{keys}"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    log(f"{keys:,} keys")
    r = {"keys": keys, "partitions": partitions, "tail_updates": keys // TAIL_FRACTION}
    r["stage"] = _phase("stage", work, keys, partitions, log)
    r["ss_load"] = _phase("ss-load", work, keys, partitions, log)
    r["ss_recover"] = _phase("ss-recover", work, keys, partitions, log)
    r["ss_correct"] = r["ss_recover"]["sample"] == expected_sample(keys) and r["ss_recover"]["keys"] == keys
    _link(work / "input" / "load", work / "rocks-src")
    r["rocks_load"] = _phase("rocks-load", work, keys, partitions, log)
    _link(work / "input" / "tail", work / "rocks-src")
    r["rocks_tail"] = _phase("rocks-tail", work, keys, partitions, log)
    _link(work / "input" / "probe", work / "rocks-src")
    r["rocks_recover"] = _phase("rocks-recover", work, keys, partitions, log)
    shutil.rmtree(work, ignore_errors=True)
    return r


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--keys", default="1000000")
    p.add_argument("--partitions", type=int, default=4)
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()))
    args = p.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    command = " ".join(shlex.quote(a) for a in [".venv/bin/python", "benchmarks/durability/snapshot_recovery.py", *argv])
    (args.out / "command.txt").write_text(command + "\n")
    scratch = Path(tempfile.mkdtemp(prefix="durability-bench-", dir=args.scratch))
    log_file = (args.out / "log.txt").open("w")

    def log(msg: str) -> None:
        print(msg, flush=True)
        log_file.write(msg + "\n")
        log_file.flush()

    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    meta = {"command": command, "git_commit": commit, "cpus": os.cpu_count(),
            "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "load_avg_start": os.getloadavg()}
    sizes = []
    try:
        for keys in (int(k) for k in args.keys.split(",")):
            sizes.append(run_size(keys, args.partitions, scratch, log))
            (args.out / "snapshot_recovery.json").write_text(json.dumps({"meta": meta, "sizes": sizes}, indent=1))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    meta["load_avg_end"] = os.getloadavg()
    (args.out / "snapshot_recovery.json").write_text(json.dumps({"meta": meta, "sizes": sizes}, indent=1))
    write_report(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
