"""Median and spread of the issue 28 engine-speed runs (2026-11-25, second session): JMH fetch `latest`
by how the caller holds its key, JMH apply on main's engine beside this one, and the CPU-time runs.

    python benchmarks/jmh/engine_speed_report.py RUNS_DIR OUT_PREFIX "how it was run"

RUNS_DIR holds fetch-branch-N.json (FetchLatestBenchmark, impl=engine, both callerKeys),
apply-main-N.json and apply-branch-N.json (ApplyBenchmark, impl=engine; main's core classes first on
the classpath for main), N = 1, 2, 3, and optionally cpu-*.jsonl (CpuTimeThroughput lines, each with
a "label" or "engine") and loads.txt. Writes OUT_PREFIX.json, OUT_PREFIX.md and OUT_PREFIX.png.
Needs matplotlib.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def jmh(runs_dir: Path, pattern: str, key) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for f in sorted(runs_dir.glob(pattern)):
        for run in json.loads(f.read_text()):
            out.setdefault(key(f, run), []).append(run["primaryMetric"]["score"])
    return out


def cpu(runs_dir: Path) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for f in sorted(runs_dir.glob("cpu-*.jsonl")):
        for line in f.read_text().splitlines():
            if not line.startswith("{"):
                continue
            r = json.loads(line)
            if r["warmup"]:
                continue
            name = f"{r['what']} per CPU-s, {r.get('label') or r.get('engine')}"
            out.setdefault(name, []).append(r["ops_per_cpu_s"])
    return out


def summary(xs: list[float]) -> dict:
    return {"median": statistics.median(xs), "min": min(xs), "max": max(xs), "n": len(xs), "all": xs}


def main() -> None:
    runs_dir, prefix, how = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    rows: dict[str, list[float]] = {}

    def fetch_name(f: Path, r: dict) -> str:
        return f"fetch latest, JMH wall, callerKeys={r['params']['callerKeys']}"

    rows.update(jmh(runs_dir, "fetch-branch-*.json", fetch_name))
    rows.update(jmh(runs_dir, "apply-*-*.json", lambda f, r: f"apply, JMH wall, {f.name.split('-')[1]}"))
    rows.update(cpu(runs_dir))
    result = {name: summary(xs) for name, xs in rows.items()}
    loads = (runs_dir / "loads.txt").read_text() if (runs_dir / "loads.txt").exists() else ""
    prefix.with_suffix(".json").write_text(json.dumps({"how": how, "loads": loads, "rows": result}, indent=2))
    lines = [
        f"# Engine speed runs (issue 28)\n\n{how}\n",
        "Millions per second: median (min-max, runs). `main` is main's core classes on the same harness.\n",
        "| measurement | median | min-max | runs |",
        "| --- | --- | --- | --- |",
    ]
    for name, s in result.items():
        lines.append(f"| {name} | {s['median'] / 1e6:.2f} | {s['min'] / 1e6:.2f}-{s['max'] / 1e6:.2f} | {s['n']} |")
    if loads:
        lines += ["", "Load averages (1, 5, 15 min) at each run's start and end:", "", "```", loads.strip(), "```"]
    prefix.with_suffix(".md").write_text("\n".join(lines) + "\n")
    names = list(result)
    fig, ax = plt.subplots(figsize=(10, 0.5 * len(names) + 1.5))
    med = [result[n]["median"] / 1e6 for n in names]
    lo = [result[n]["median"] / 1e6 - result[n]["min"] / 1e6 for n in names]
    hi = [result[n]["max"] / 1e6 - result[n]["median"] / 1e6 for n in names]
    ax.barh(names, med, xerr=[lo, hi], color="tab:blue")
    ax.axvline(5, color="tab:red", linestyle="--", label="fetch target 5 M/s")
    ax.axvline(2, color="tab:orange", linestyle="--", label="apply target 2 M/s")
    ax.set_xlabel("millions per second (median, min-max)")
    ax.invert_yaxis()
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(prefix.with_suffix(".png"), dpi=100)


if __name__ == "__main__":
    main()
