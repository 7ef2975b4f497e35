#!/usr/bin/env python3
"""Table and plot of the transaction benchmark (JMH TransactionBenchmark JSON): per application and
thread count, the median of the measurement iterations of each scheme (engine, lock, sequential),
its spread (min-max) and the engine's ratio to each peer. Given several JSON files (separate runs),
each cell is the median of the runs' medians and the spread the min-max of the runs' medians.

Usage: python benchmarks/txn_report.py benchmarks/results/transactions/jmh.json [more runs ...]
Writes table.md and plot.png beside the first JSON. Needs matplotlib.
"""

import json
import statistics
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

IMPLS = ["engine", "lock", "sequential"]


def main(path: str, *more: str) -> None:
    files = [path, *more]
    medians: dict = {}  # (app, threads, impl) -> per file: (median, min, max) of its iterations
    runs = []
    for f in files:
        for run in json.loads(Path(f).read_text()):
            runs.append(run)
            p = run["params"]
            raw = [x / 1e3 for fork in run["primaryMetric"]["rawData"] for x in fork]
            medians.setdefault((p["app"], int(p["threads"]), p["impl"]), []).append(
                (statistics.median(raw), min(raw), max(raw))
            )
    cells = {}  # (app, threads, impl) -> (median, min, max) in K transactions/s
    for key, ms in medians.items():
        if len(ms) == 1:
            cells[key] = ms[0]
        else:
            mids = [m[0] for m in ms]
            cells[key] = (statistics.median(mids), min(mids), max(mids))
    apps = list(dict.fromkeys(r["params"]["app"] for r in runs))
    threads = sorted({int(r["params"]["threads"]) for r in runs})
    lines = [
        "# Transactions at the core level: TStream applications",
        "",
        "JMH `TransactionBenchmark` (see `command.txt`): 10,000 transactions per invocation, "
        + (
            "median of 3 measurement iterations (min-max), "
            if len(files) == 1
            else f"{len(files)} runs (separate JMH invocations): median of the runs' medians of 3 "
            "measurement iterations (min-max of the runs' medians), "
        )
        + "K transactions/s. 2-core VM shared with other work: noisy. `sequential` ignores the thread count.",
        "",
        "| app | threads | engine | lock | sequential | engine / lock | engine / sequential |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for app in apps:
        for t in threads:
            row = [cells.get((app, t, i)) for i in IMPLS]
            fmt = [f"{c[0]:.0f} ({c[1]:.0f}-{c[2]:.0f})" if c else "-" for c in row]
            e, lk, sq = (c[0] if c else None for c in row)
            ratio = [f"{e / x:.2f}x" if e and x else "-" for x in (lk, sq)]
            lines.append(f"| {app.upper()} | {t} | " + " | ".join(fmt + ratio) + " |")
    out = Path(path).parent
    (out / "table.md").write_text("\n".join(lines) + "\n")

    fig, axes = plt.subplots(1, len(apps), figsize=(3.2 * len(apps), 3.6))
    for ax, app in zip(axes, apps):
        width = 0.8 / len(IMPLS)
        for n, impl in enumerate(IMPLS):
            xs, ys, lo, hi = [], [], [], []
            for k, t in enumerate(threads):
                c = cells.get((app, t, impl))
                if c:
                    xs.append(k + n * width)
                    ys.append(c[0])
                    lo.append(c[0] - c[1])
                    hi.append(c[2] - c[0])
            ax.bar(xs, ys, width, yerr=[lo, hi], label=impl, capsize=2)
        ax.set_xticks([k + width for k in range(len(threads))])
        ax.set_xticklabels([f"{t} thr" for t in threads])
        ax.set_title(app.upper())
        ax.set_ylabel("K txn/s")
    axes[0].legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "plot.png", dpi=110)


if __name__ == "__main__":
    main(*sys.argv[1:])
