"""Spark's state store providers side by side on the same three stateful queries (issue 22):
HDFSBackedStateStoreProvider, RocksDBStateStoreProvider with changelog checkpointing, and sharedstate's
SharedStateStoreProvider when the jar has it. See benchmarks/README.md.

    .venv/bin/python benchmarks/statestore/compare_providers.py --out benchmarks/results/statestore --runs 3
    .venv/bin/python benchmarks/statestore/compare_providers.py --out /tmp/ss-quick --quick      # small keys, one run

Per run and provider, two fresh Spark applications (local[2]), one after the other (`provider_process.py`):
a steady phase (each query alone from an empty checkpoint, then all three restarted and the process group
killed with SIGKILL mid-batch) and a restart phase (all three from the checkpoints the kill left, timed to
their first completed batch). The JSON has every batch; the table medians over runs with min-max.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from queries import FULL, METRICS, PROVIDER_CLASS_FILE, PROVIDERS, QUERIES, QUICK, Sizes
from store_report import write_report

HERE = Path(__file__).resolve().parent


def percentile(values: list[float], q: float) -> float:
    """Linear interpolation between the closest ranks (numpy's default)."""
    xs = sorted(values)
    pos = (len(xs) - 1) * q
    lo = int(pos)
    hi = min(lo + 1, len(xs) - 1)
    return xs[lo] + (xs[hi] - xs[lo]) * (pos - lo)


def provider_absent(provider: str) -> str | None:
    """Why a provider cannot run here, or None: sharedstate's needs its class in the plugin jar."""
    if provider not in PROVIDER_CLASS_FILE:
        return None
    try:
        from sharedstate._jars import plugin_jar

        jar = plugin_jar()
    except (ImportError, FileNotFoundError) as e:
        return f"no sharedstate plugin jar: {e}"
    with zipfile.ZipFile(jar) as z:
        if PROVIDER_CLASS_FILE[provider] not in z.namelist():
            return f"{jar} has no {PROVIDER_CLASS_FILE[provider]} (the provider is not built yet)"
    return None


def _phase(phase: str, provider: str, work: Path, sizes: Sizes, log, on_event=None) -> list[dict]:
    """Runs provider_process.py in its own process group; returns its events. on_event may return True
    to have the whole group (Python and the driver JVM) killed with SIGKILL: the driver crash."""
    err_path = work / f"{phase}.stderr"
    sizes_arg = json.dumps(sizes.to_json())
    events: list[dict] = []
    crashed = False
    with err_path.open("w") as err:
        proc = subprocess.Popen(
            [sys.executable, str(HERE / "provider_process.py"), phase, provider, str(work), sizes_arg],
            stdout=subprocess.PIPE,
            stderr=err,
            text=True,
            start_new_session=True,
        )
        try:
            for line in proc.stdout:
                if not line.startswith("EVENT "):
                    continue
                ev = json.loads(line[len("EVENT ") :])
                events.append(ev)
                log(f"    {provider} {phase}: {_summary(ev)}")
                if on_event is not None and on_event(ev):
                    os.killpg(proc.pid, signal.SIGKILL)
                    events.append({"event": "killed", "at": time.time()})
                    crashed = True
                    break
        except BaseException:
            os.killpg(proc.pid, signal.SIGKILL)  # compare_providers.py itself failed or was stopped: no orphaned JVM
            raise
        rc = proc.wait()
    if not crashed and rc != 0:
        raise RuntimeError(f"{provider} {phase} failed ({rc}):\n{err_path.read_text()[-4000:]}")
    return events


def _summary(ev: dict) -> str:
    if ev["event"] == "steady":
        durs = [b["durationMs"]["triggerExecution"] for b in ev["batches"]]
        return f"{ev['query']} batches {durs} ms, state {ev['state_rows']:,} rows {ev['state_memory_bytes']:,} B"
    if ev["event"] == "recovered":
        return f"{ev['query']} first batch after restart done {ev['recovery_ms']:.0f} ms after start()"
    return ev["event"]


def run_provider(provider: str, work: Path, sizes: Sizes, log) -> dict:
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    load = os.getloadavg()
    t = time.perf_counter()

    def crash(ev: dict) -> bool:
        if ev["event"] != "crash-ready":
            return False
        # every query is mid-stream now (back-to-back batches); wait half an aggregation batch so the kill
        # lands inside batches rather than at a boundary
        steady = next(e for e in events_seen if e.get("query") == "aggregation")
        durs = [b["durationMs"]["triggerExecution"] for b in steady["batches"]]
        time.sleep(statistics.median(durs) / 2000)
        return True

    events_seen: list[dict] = []

    def remember(ev: dict) -> bool:
        events_seen.append(ev)
        return crash(ev)

    steady = _phase("steady", provider, work, sizes, log, on_event=remember)
    restart = _phase("restart", provider, work, sizes, log)
    out = {"process_wall_s": time.perf_counter() - t, "load_avg_before": load, "load_avg_after": os.getloadavg()}
    out["queries"] = {}
    by_query = {e["query"]: e for e in steady if e["event"] == "steady"}
    recovered = {e["query"]: e for e in restart if e["event"] == "recovered"}
    ready = next(e for e in steady if e["event"] == "crash-ready")
    for query in QUERIES:
        s, r = by_query[query], recovered[query]
        measured = s["batches"][sizes.warmup_batches :]
        trig = [b["durationMs"]["triggerExecution"] for b in measured]
        add = [b["durationMs"].get("addBatch", 0) for b in measured]
        out["queries"][query] = {
            "batch_p50_ms": percentile(trig, 0.5),
            "batch_p99_ms": percentile(trig, 0.99),
            "add_batch_p50_ms": percentile(add, 0.5),
            "state_memory_bytes": s["state_memory_bytes"],
            "state_rows": s["state_rows"],
            "rss_bytes": s["rss"]["VmRSS"],
            "checkpoint_bytes": s["checkpoint_bytes"],
            "state_dir_bytes": s["state_dir_bytes"],
            "recovery_ms": r["recovery_ms"],
            "recovery_first_batch_ms": r["first_batch"]["durationMs"]["triggerExecution"],
            # every batch's durations and state rows; the custom metrics of the last one only (the JSON stays small)
            "batches": [{k: v for k, v in b.items() if k != "customMetrics"} for b in s["batches"][:-1]]
            + s["batches"][-1:],
            "first_batch_after_restart": r["first_batch"],
        }
    out["rss_peak_bytes"] = ready["rss"]["VmHWM"]
    out["session_s"] = [e["session_s"] for e in steady + restart if e["event"] == "started"]
    return out


def summarize(runs: list[dict], providers: dict) -> tuple[dict, dict]:
    """Median, min and max over runs of each metric; and each provider's median ratio to RocksDB."""
    summary: dict = {}
    for p, info in providers.items():
        if not info["available"]:
            continue
        summary[p] = {}
        for query in QUERIES:
            summary[p][query] = {}
            for m in METRICS:
                vals = [r["providers"][p]["queries"][query][m] for r in runs]
                summary[p][query][m] = {
                    "median": statistics.median(vals),
                    "min": min(vals),
                    "max": max(vals),
                    "values": vals,
                }
    ratios: dict = {}
    if "rocksdb" in summary:
        for p in summary:
            ratios[p] = {query: {} for query in QUERIES}
            for query in QUERIES:
                for m in METRICS:
                    base = summary["rocksdb"][query][m]["median"]
                    ratios[p][query][m] = summary[p][query][m]["median"] / base if base else None
    return summary, ratios


def report_only(out: Path) -> int:
    path = out / "statestore.json"
    doc = json.loads(path.read_text())
    doc["summary"], doc["ratios_to_rocksdb"] = summarize(doc["runs"], doc["providers"])
    doc["meta"]["runs"] = len(doc["runs"])
    doc["meta"].setdefault("finished", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(path.stat().st_mtime)))
    path.write_text(json.dumps(doc, indent=1))
    write_report(out)
    return 0


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True)
    p.add_argument("--runs", type=int, default=3, help="full runs; the table takes the median (--quick: 1)")
    p.add_argument("--quick", action="store_true", help="small keys, one run (the smoke test)")
    p.add_argument("--providers", default=",".join(PROVIDERS), help=f"comma-separated, of {','.join(PROVIDERS)}")
    p.add_argument("--scratch", type=Path, default=Path(tempfile.gettempdir()))
    p.add_argument("--note", default="", help="a line for the table (e.g. what else ran on the machine)")
    p.add_argument(
        "--report-only",
        action="store_true",
        help="recompute the medians, ratios, table and plot from --out's statestore.json (e.g. of a stopped run)",
    )
    args = p.parse_args(argv)
    if args.report_only:
        return report_only(args.out)
    # a SIGTERM unwinds like Ctrl-C, so the running phase's process group is killed, not orphaned
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    sizes = QUICK if args.quick else FULL
    runs = 1 if args.quick else args.runs
    chosen = [x for x in args.providers.split(",") if x]
    unknown = [x for x in chosen if x not in PROVIDERS]
    if unknown:
        p.error(f"--providers: unknown {unknown}; allowed: {', '.join(PROVIDERS)}")
    args.out.mkdir(parents=True, exist_ok=True)
    script = "benchmarks/statestore/compare_providers.py"
    command = " ".join(shlex.quote(a) for a in [".venv/bin/python", script, *argv])
    (args.out / "command.txt").write_text(command + "\n")
    log_file = (args.out / "log.txt").open("w")

    def log(msg: str) -> None:
        print(msg, flush=True)
        log_file.write(msg + "\n")
        log_file.flush()

    providers = {}
    for name in chosen:
        reason = provider_absent(name)
        providers[name] = {"available": reason is None, **({"absent_reason": reason} if reason else {})}
        if reason:
            log(f"{name}: absent ({reason})")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=HERE).stdout.strip()
    meta = {
        "command": command,
        "git_commit": commit,
        "cpus": os.cpu_count(),
        "mode": "quick" if args.quick else "full",
        "runs": runs,
        "sizes": sizes.to_json(),
        "note": args.note,
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "load_avg_start": os.getloadavg(),
    }
    scratch = Path(tempfile.mkdtemp(prefix="statestore-bench-", dir=args.scratch))
    results: list[dict] = []
    path = args.out / "statestore.json"
    try:
        for i in range(runs):
            log(f"run {i + 1} of {runs}")
            run = {"run": i + 1, "providers": {}}
            # the providers' order turns each run, so a change in the machine's load does not favour one
            order = [x for x in chosen if providers[x]["available"]]
            order = order[i % len(order) :] + order[: i % len(order)] if order else order
            for name in order:
                run["providers"][name] = run_provider(name, scratch / f"run{i + 1}" / name, sizes, log)
            results.append(run)
            path.write_text(json.dumps({"meta": meta, "providers": providers, "runs": results}, indent=1))
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    summary, ratios = summarize(results, providers)
    meta["finished"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    meta["load_avg_end"] = os.getloadavg()
    doc = {"meta": meta, "providers": providers, "summary": summary, "ratios_to_rocksdb": ratios, "runs": results}
    path.write_text(json.dumps(doc, indent=1))
    write_report(args.out)
    log(f"wrote {path}, table.md and plot.png")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
