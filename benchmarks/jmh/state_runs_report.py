"""Median and spread of repeated JMH runs of the State benchmarks, the new engine beside the previous
one (main's classes on the same classpath) and the two baselines, plus the CPU-time runs.

    python benchmarks/jmh/state_runs_report.py RUNS_DIR OUT_PREFIX "how it was run"

RUNS_DIR holds fetch-new-N.json, apply-new-N.json (every impl) and fetch-old-N.json, apply-old-N.json
(impl=engine on the previous engine), N = 1, 2, 3, and optionally cpu-fetch-{new,old}.jsonl,
cpu-apply-{new,old}.jsonl (CpuTimeThroughput) and load.txt. Writes OUT_PREFIX.json (every score),
OUT_PREFIX.md (the table) and OUT_PREFIX.png (the plot). Needs matplotlib.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def scores(runs_dir: Path, bench: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for which in ("new", "old"):
        for f in sorted(runs_dir.glob(f"{bench}-{which}-*.json")):
            for run in json.loads(f.read_text()):
                impl = run["params"]["impl"]
                name = f"{impl} (previous)" if which == "old" else impl
                out.setdefault(name, []).append(run["primaryMetric"]["score"])
    return out


def cpu_scores(runs_dir: Path, bench: str) -> dict[str, list[float]]:
    out: dict[str, list[float]] = {}
    for which in ("new", "old"):
        f = runs_dir / f"cpu-{bench}-{which}.jsonl"
        if f.exists():
            rows = [json.loads(line) for line in f.read_text().splitlines() if line.startswith("{")]
            name = "engine (previous)" if which == "old" else "engine"
            measured = [r["ops_per_cpu_s"] for r in rows if not r["warmup"]]
            if measured:
                out[name] = measured
    return out


def cell(xs: list[float]) -> str:
    return f"{statistics.median(xs) / 1e6:.2f} M ({min(xs) / 1e6:.2f}-{max(xs) / 1e6:.2f}, n={len(xs)})"


def main(runs_dir: str, prefix: str, how: str) -> None:
    d = Path(runs_dir)
    table = {
        "fetch latest, 1M keys x 8 (JMH, ops/s of wall time)": scores(d, "fetch"),
        "apply 1M x 8 updates (JMH, updates/s of wall time)": scores(d, "apply"),
        "fetch latest, 1M keys x 8 (ops per CPU-second)": cpu_scores(d, "fetch"),
        "apply 1M x 8 updates (updates per CPU-second)": cpu_scores(d, "apply"),
    }
    table = {k: v for k, v in table.items() if v}
    impls = ["engine", "engine (previous)", "skiplist", "locked_treemap"]
    load = (d / "load.txt").read_text() if (d / "load.txt").exists() else ""
    lines = [
        "# State engine: fetch and apply, median of runs",
        "",
        how,
        "",
        "Median (min-max, number of scores) in millions per second. `engine (previous)` is the engine before",
        "this change (main's classes on the same classpath, same harness, same runs).",
        "",
        "| benchmark | " + " | ".join(impls) + " | engine / previous |",
        "| --- | " + " | ".join("---:" for _ in impls) + " | ---: |",
    ]
    for name, by_impl in table.items():
        cells = [cell(by_impl[i]) if i in by_impl else "" for i in impls]
        ratio = ""
        if "engine" in by_impl and "engine (previous)" in by_impl:
            ratio = f"{statistics.median(by_impl['engine']) / statistics.median(by_impl['engine (previous)']):.2f}x"
        lines.append(f"| {name} | " + " | ".join(cells) + f" | {ratio} |")
    if load:
        lines += ["", "Load average (1, 5, 15 min) at each step of the runs:", "", "```", load.strip(), "```"]
    Path(prefix + ".md").write_text("\n".join(lines) + "\n")
    Path(prefix + ".json").write_text(json.dumps({"how": how, "scores": table, "load": load}, indent=1) + "\n")

    fig, axes = plt.subplots(1, len(table), figsize=(4.5 * len(table), 4))
    for ax, (name, by_impl) in zip(axes if len(table) > 1 else [axes], table.items()):
        names = [i for i in impls if i in by_impl]
        med = [statistics.median(by_impl[i]) / 1e6 for i in names]
        lo = [m - min(by_impl[i]) / 1e6 for m, i in zip(med, names)]
        hi = [max(by_impl[i]) / 1e6 - m for m, i in zip(med, names)]
        ax.bar(range(len(names)), med, yerr=[lo, hi], capsize=4)
        ax.set_xticks(range(len(names)), names, rotation=30, ha="right", fontsize=8)
        ax.set_title(name, fontsize=8)
        ax.set_ylabel("M per second")
    fig.tight_layout()
    fig.savefig(prefix + ".png", dpi=110)


if __name__ == "__main__":
    main(*sys.argv[1:4])
