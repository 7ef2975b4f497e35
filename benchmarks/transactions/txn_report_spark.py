"""Table and plot of the Spark transaction benchmark (benchmarks/transactions/bench_transactions.py): per
application and method, the median over the runs of throughput and p99 outcome latency (min-max),
correctness, and the plugin's ratios to each peer."""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

PLUGIN = "sharedstate"


def _cell(values: list[float], fmt: str) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values):{fmt}} ({min(values):{fmt}}-{max(values):{fmt}})"


def write_report(out: Path, meta: dict, points: list[dict]) -> None:
    apps = list(dict.fromkeys(p["app"] for p in points))
    methods = list(dict.fromkeys(p["method"] for p in points))
    runs = sorted({p["run"] for p in points})
    s = meta["settings"]

    def of(app, method, key):
        return [p[key] for p in points if p["app"] == app and p["method"] == method and p[key] is not None]

    lines = [
        "# State transactions on Spark: TStream applications",
        "",
        "`benchmarks/transactions/bench_transactions.py` "
        f"({meta['started_utc']}, {meta['minutes']} min, {meta['machine']}): "
        f"{s['events']} events per application ({s['records']} records, the paper's skew and multi-partition "
        f"mix) offered at a fixed {s['rate']} events/s, {len(runs)} run(s); median over the runs (min-max). "
        "Throughput = events / (last outcome visible - first input file visible), at most about the "
        "offered rate; p99 = outcome visible - input file visible. Correct = every final State equals the "
        "sequential oracle's in every run. Peers: a foreachBatch applying each batch's final events in time "
        "order in the driver, the State in Delta (read the touched keys, MERGE the new values) or in Redis "
        "(MGET, MSET).",
        "",
        "| app | method | events/s | p99 ms | p50 ms | complete | correct |",
        "| --- | --- | ---: | ---: | ---: | --- | --- |",
    ]
    for app in apps:
        for m in methods:
            ps = [p for p in points if p["app"] == app and p["method"] == m]
            complete = sum(p["complete"] for p in ps)
            correct = sum(p["correct"] for p in ps)
            lines.append(
                f"| {app} | {m} | {_cell(of(app, m, 'throughput'), ',.0f')} | {_cell(of(app, m, 'p99_ms'), ',.0f')} | "
                f"{_cell(of(app, m, 'p50_ms'), ',.0f')} | {complete}/{len(ps)} | {correct}/{len(ps)} |"
            )
    peers_all = [m for m in methods if m != PLUGIN]
    ratio_rows = []
    for app in apps:
        if PLUGIN not in methods or not of(app, PLUGIN, "throughput"):
            continue
        plugin = statistics.median(of(app, PLUGIN, "throughput"))
        plugin_p99 = statistics.median(of(app, PLUGIN, "p99_ms")) if of(app, PLUGIN, "p99_ms") else None
        cells = []
        for m in peers_all:
            t, p = of(app, m, "throughput"), of(app, m, "p99_ms")
            cells.append(f"{plugin / statistics.median(t):.1f}x" if t else "-")
            cells.append(f"{statistics.median(p) / plugin_p99:.1f}x" if p and plugin_p99 else "-")
        ratio_rows.append(f"| {app} | " + " | ".join(cells) + " |")
    if ratio_rows and peers_all:
        lines += [
            "",
            "Ratios of the medians: sharedstate's throughput / the peer's, and the peer's p99 / sharedstate's "
            "(above 1: sharedstate is better).",
            "",
            "| app | " + " | ".join(f"throughput vs {m} | p99 vs {m}" for m in peers_all) + " |",
            "| --- | " + " | ".join("---: | ---:" for _ in peers_all) + " |",
            *ratio_rows,
        ]
    lines += ["", f"Command: `{meta['command']}`", ""]
    (out / "spark-table.md").write_text("\n".join(lines))

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    width = 0.8 / max(1, len(methods))
    for ax, key, label in ((axes[0], "throughput", "events/s (median, min-max)"), (axes[1], "p99_ms", "p99 ms")):
        for n, m in enumerate(methods):
            xs, ys, lo, hi = [], [], [], []
            for k, app in enumerate(apps):
                v = of(app, m, key)
                if v:
                    med = statistics.median(v)
                    xs.append(k + n * width)
                    ys.append(med)
                    lo.append(med - min(v))
                    hi.append(max(v) - med)
            ax.bar(xs, ys, width, yerr=[lo, hi], label=m, capsize=2)
        ax.set_xticks([k + width * (len(methods) - 1) / 2 for k in range(len(apps))])
        ax.set_xticklabels(apps)
        ax.set_ylabel(label)
        ax.set_yscale("log")
    axes[0].legend(fontsize=7)
    axes[0].set_title(f"throughput at {s['rate']} events/s offered")
    axes[1].set_title("p99 outcome latency")
    fig.tight_layout()
    fig.savefig(out / "spark-plot.png", dpi=110)
    plt.close(fig)


if __name__ == "__main__":
    out = Path(sys.argv[1])
    data = json.loads((out / "spark-runs.json").read_text())
    write_report(out, data["meta"], data["points"])
