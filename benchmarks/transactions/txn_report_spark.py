"""Table and plot of the Spark transaction benchmark (benchmarks/transactions/bench_transactions.py): per
application and method, the median over the runs of the highest sustained rate (min-max), the
p50/p99 outcome latency at the common rate, correctness, and the plugin's ratios to each peer."""

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


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def write_report(out: Path, meta: dict, searches: list[dict], points: list[dict]) -> None:
    apps = list(dict.fromkeys(s["app"] for s in searches))
    methods = list(dict.fromkeys(s["method"] for s in searches))
    runs = sorted({s["run"] for s in searches})
    s = meta["settings"]
    common = s["common_rate"]

    def best(app, method):
        # a search that sustained nothing counts as 0
        return [x["max_sustained_rate"] or 0 for x in searches if x["app"] == app and x["method"] == method]

    def at_common(app, method, key):
        return [
            p[key]
            for p in points
            if p["app"] == app and p["method"] == method and p["offered_rate"] == common and p["run"] > 0
            and p[key] is not None
        ]  # fmt: skip

    def wrong(app, method):
        ps = [p for p in points if p["app"] == app and p["method"] == method and p["run"] > 0]
        return sum(p["correct"] is False for p in ps), len(ps)

    load = meta.get("load_avg_1m")
    lines = [
        "# State transactions on Spark: TStream applications",
        "",
        "`benchmarks/transactions/bench_transactions.py` "
        f"({meta['started_utc']}, {meta['minutes']} min, {meta['machine']}"
        + (f", 1-min load average {load[0]:.1f}-{load[1]:.1f} during the points" if load else "")
        + f"): {len(runs)} run(s); median over the runs (min-max). Max sustained = the highest offered rate "
        f"(events/s, {s['seconds']} s of input per point, {s['records']} records per State, the paper's skew "
        "and multi-partition mix) at which every outcome came out, the backlog did not grow (latency of the "
        "last quarter within 0.5 s + 25% of p50 of the second's; every outcome within the lag cap) and "
        "the final States equal the sequential oracle's; found by doubling then one geometric bisection, so "
        f"a rate is known within a factor of about 1.4; the search stops at {s['high']:,} events/s, so a side "
        "there may sustain more (its ratios are then lower bounds, marked >=). p50/p99 = outcome visible - "
        "input file visible, at "
        f"the common rate {common:,} events/s. Peers: a foreachBatch applying each batch's final events in "
        "time order in the driver, the State in Delta (read the touched keys, MERGE the new values) or in "
        "Redis (MGET, MSET). Points wrong: points whose final States differ from the oracle's, of all points "
        "run (a point cut short is not judged).",
        "",
        f"| app | method | max sustained events/s | p50 ms at {common:,}/s | p99 ms at {common:,}/s | points wrong |",
        "| --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for app in apps:
        for m in methods:
            bad, n = wrong(app, m)
            lines.append(
                f"| {app} | {m} | {_cell(best(app, m), ',.0f')} | {_cell(at_common(app, m, 'p50_ms'), ',.0f')} | "
                f"{_cell(at_common(app, m, 'p99_ms'), ',.0f')} | {bad}/{n} |"
            )
    peers = [m for m in methods if m != PLUGIN]
    ratio_rows = []
    for app in apps:
        mine, mine_p99 = _median(best(app, PLUGIN)), _median(at_common(app, PLUGIN, "p99_ms"))
        if PLUGIN not in methods or not mine:
            continue
        cells = []
        for m in peers:
            theirs, their_p99 = _median(best(app, m)), _median(at_common(app, m, "p99_ms"))
            at_least = ">= " if mine >= s["high"] else ""
            cells.append(f"{at_least}{mine / theirs:.1f}x" if theirs else f"> {mine / s['low']:.0f}x (none sustained)")
            cells.append(f"{their_p99 / mine_p99:.1f}x" if their_p99 and mine_p99 else "-")
        ratio_rows.append(f"| {app} | " + " | ".join(cells) + " |")
    if ratio_rows and peers:
        lines += [
            "",
            "Ratios of the medians: sharedstate's max sustained rate / the peer's, and the peer's p99 / "
            f"sharedstate's at {common:,} events/s (above 1: sharedstate is better).",
            "",
            "| app | " + " | ".join(f"max rate vs {m} | p99 vs {m}" for m in peers) + " |",
            "| --- | " + " | ".join("---: | ---:" for _ in peers) + " |",
            *ratio_rows,
        ]
    lines += ["", f"Command: `{meta['command']}`", ""]
    (out / "spark-table.md").write_text("\n".join(lines))

    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    width = 0.8 / max(1, len(methods))
    series = (
        (axes[0], lambda a, m: best(a, m), "max sustained events/s (median, min-max)"),
        (axes[1], lambda a, m: at_common(a, m, "p99_ms"), f"p99 ms at {common:,} events/s"),
    )
    for ax, values, label in series:
        plotted = False
        for n, m in enumerate(methods):
            xs, ys, lo, hi = [], [], [], []
            for k, app in enumerate(apps):
                v = [x for x in values(app, m) if x]
                if v:
                    med = statistics.median(v)
                    xs.append(k + n * width)
                    ys.append(med)
                    lo.append(med - min(v))
                    hi.append(max(v) - med)
            if xs:
                ax.bar(xs, ys, width, yerr=[lo, hi], label=m, capsize=2)
                plotted = True
        ax.set_xticks([k + width * (len(methods) - 1) / 2 for k in range(len(apps))])
        ax.set_xticklabels(apps)
        ax.set_ylabel(label)
        if plotted:
            ax.set_yscale("log")
            ax.legend(fontsize=7)
    axes[0].set_title("highest sustained rate")
    axes[1].set_title("p99 outcome latency at the common rate")
    fig.tight_layout()
    fig.savefig(out / "spark-plot.png", dpi=110)
    plt.close(fig)


def merge(parts: list[dict]) -> dict:
    """Several runs of the benchmark (e.g. one application each, so each holds the benchmark lock for a
    shorter time) as one: their searches and points together, the commands joined, the load range and
    minutes over all. Their settings must be equal."""
    settings = [p["meta"]["settings"] for p in parts]
    if any(s != settings[0] for s in settings):
        raise SystemExit(f"the parts' settings differ: {settings}")
    loads = [x for p in parts for x in (p["meta"].get("load_avg_1m") or [])]
    meta = dict(parts[0]["meta"])
    meta.update(
        command=" ; ".join(p["meta"]["command"] for p in parts),
        minutes=round(sum(p["meta"]["minutes"] for p in parts), 1),
        load_avg_1m=[min(loads), max(loads)] if loads else None,
    )
    return {
        "meta": meta,
        "searches": [s for p in parts for s in p["searches"]],
        "points": [x for p in parts for x in p["points"]],
    }


if __name__ == "__main__":
    # txn_report_spark.py OUT [PART ...]: the report of OUT/spark-runs.json, or of the PARTs' merged into it.
    out = Path(sys.argv[1])
    parts = [Path(p) for p in sys.argv[2:]]
    if parts:
        data = merge([json.loads((p / "spark-runs.json").read_text()) for p in parts])
        out.mkdir(parents=True, exist_ok=True)
        (out / "spark-runs.json").write_text(json.dumps(data, indent=1) + "\n")
    else:
        data = json.loads((out / "spark-runs.json").read_text())
    write_report(out, data["meta"], data["searches"], data["points"])
