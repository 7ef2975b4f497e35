#!/usr/bin/env python3
"""Turns the JMH JSON of the ESG merge and X:1 delivery benchmarks into a markdown table and a plot.

Usage: python benchmarks/esg_delivery_report.py [results-root]   (default: benchmarks/results)
Reads  esg/esg-merge.json and delivery/xto1-delivery.json; writes table.md and plot.png beside them.
Needs matplotlib.
"""

import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MACHINE = (
    "2 CPU cores (shared with other builds while it ran), Java 17; short JMH runs "
    "(-wi 2 -i 3 -f 1 -w 1s -r 2s), so errors are wide and small differences are noise."
)


def load(path):
    with open(path) as f:
        return json.load(f)


def score(run):
    m = run["primaryMetric"]
    return m["score"], m["scoreError"] if m["scoreError"] == m["scoreError"] else 0.0  # NaN -> 0


def settings(runs):
    r = runs[0]
    return (
        f"warmup {r['warmupIterations']} x {r['warmupTime']}, measurement "
        f"{r['measurementIterations']} x {r['measurementTime']}, forks {r['forks']}, "
        f"JMH {r['jmhVersion']}, {r['vmName']} {r['vmVersion']}"
    )


def clipped(scores, errors):
    """Error bars for a log axis: the lower bar stops just above zero."""
    return [[min(e, 0.9 * y) for y, e in zip(scores, errors)], errors]


def esg_report(root):
    path = os.path.join(root, "esg", "esg-merge.json")
    runs = load(path)
    peers = ["esg", "pbqMerge", "perSourceMerge"]
    cells = {}
    for r in runs:
        p = r["params"]
        cells[(int(p["sources"]), int(p["readers"]), p["impl"])] = score(r)
    configs = sorted({(s, rd) for (s, rd, _) in cells})
    lines = [
        "# ESG merge: tuples merged and delivered to every reader, per second",
        "",
        f"Machine: {MACHINE}",
        f"JMH: {settings(runs)}.",
        "",
        "Peers: `esg` (ElasticScaleGate, sources add and readers get, no thread in between); "
        "`pbqMerge` (PriorityBlockingQueue + a merger thread + one ArrayBlockingQueue per reader); "
        "`perSourceMerge` (a JCTools SPSC queue per source, k-way merged by one thread into a JCTools "
        "SPSC queue per reader). Scores in millions of tuples per second (± JMH 99.9% error).",
        "",
        "| sources | readers | esg | pbqMerge | perSourceMerge | esg / pbqMerge | esg / perSourceMerge |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for s, rd in configs:
        row = [cells.get((s, rd, p)) for p in peers]
        fmt = [f"{v[0] / 1e6:.2f} ± {v[1] / 1e6:.2f}" if v else "n/a" for v in row]
        ratios = [f"{row[0][0] / row[i][0]:.2f}x" if row[0] and row[i] else "n/a" for i in (1, 2)]
        lines.append(f"| {s} | {rd} | " + " | ".join(fmt) + " | " + " | ".join(ratios) + " |")
    esg22, pbq22 = cells.get((2, 2, "esg")), cells.get((2, 2, "pbqMerge"))
    if esg22 and pbq22:
        ratio = esg22[0] / pbq22[0]
        lines += [
            "",
            f"Target (ESG >= 2x the lock-based merge at 2 sources, 2 readers): "
            f"{ratio:.2f}x, {'met' if ratio >= 2 else 'missed'}.",
        ]
    with open(os.path.join(root, "esg", "table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")

    fig, axes = plt.subplots(1, 4, figsize=(16, 4), sharey=True)
    for i, rd in enumerate(sorted({rd for (_, rd) in configs})):
        ax = axes[i]
        for p in peers:
            xs = [s for (s, r) in configs if r == rd and (s, r, p) in cells]
            ys = [cells[(s, rd, p)][0] / 1e6 for s in xs]
            es = [cells[(s, rd, p)][1] / 1e6 for s in xs]
            ax.errorbar(xs, ys, yerr=clipped(ys, es), marker="o", capsize=3, label=p)
        ax.set_yscale("log")
        ax.set_title(f"{rd} reader(s)")
        ax.set_xlabel("sources")
        ax.set_xticks([1, 2, 3, 4])
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("M tuples / s (log; bars: JMH 99.9% error)")
    axes[0].legend()
    fig.suptitle("ESG vs lock-based and single-merger peers (2-core machine)")
    fig.tight_layout()
    fig.savefig(os.path.join(root, "esg", "plot.png"), dpi=110)


def delivery_report(root):
    path = os.path.join(root, "delivery", "xto1-delivery.json")
    runs = load(path)
    peers = ["nova", "jctoolsMpsc", "disruptor", "arrayBlockingQueue"]
    cells = {(int(r["params"]["writers"]), r["params"]["impl"]): score(r) for r in runs}
    writers = sorted({w for (w, _) in cells})
    lines = [
        "# X:1 delivery (Nova section 5.4): 8-byte messages from X writers to one reader, per second",
        "",
        f"Machine: {MACHINE}",
        f"JMH: {settings(runs)}.",
        "",
        "`nova`: one 65,536-slot single-writer lane per writer with notification flags (io.sharedstate."
        "core.delivery.Inbox); the others share one queue of 65,536 * X slots: JCTools MpscArrayQueue, "
        "LMAX Disruptor 4 (multi-producer, EventPoller), ArrayBlockingQueue (put/take). "
        "Scores in millions of messages per second (± JMH 99.9% error).",
        "",
        "| X | nova | jctoolsMpsc | disruptor | arrayBlockingQueue | nova / jctools | nova / disruptor | nova / ABQ |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    verdicts = []
    for w in writers:
        row = [cells.get((w, p)) for p in peers]
        fmt = [f"{v[0] / 1e6:.1f} ± {v[1] / 1e6:.1f}" if v else "n/a" for v in row]
        ratios = [f"{row[0][0] / row[i][0]:.2f}x" if row[0] and row[i] else "n/a" for i in (1, 2, 3)]
        lines.append(f"| {w} | " + " | ".join(fmt) + " | " + " | ".join(ratios) + " |")
        if w >= 2 and row[0] and row[1]:
            verdicts.append(f"X={w}: {row[0][0] / row[1][0]:.2f}x ({'met' if row[0][0] >= row[1][0] else 'missed'})")
    lines += ["", "Target (conflict-free delivery >= JCTools MPSC for X >= 2): " + "; ".join(verdicts) + "."]
    with open(os.path.join(root, "delivery", "table.md"), "w") as f:
        f.write("\n".join(lines) + "\n")

    fig, ax = plt.subplots(figsize=(7, 4.5))
    for p in peers:
        xs = [w for w in writers if (w, p) in cells]
        ys = [cells[(w, p)][0] / 1e6 for w in xs]
        ax.errorbar(xs, ys, yerr=clipped(ys, [cells[(w, p)][1] / 1e6 for w in xs]), marker="o", capsize=3, label=p)
    ax.set_xscale("log", base=2)
    ax.set_xticks(writers)
    ax.set_xticklabels([str(w) for w in writers])
    ax.set_xlabel("writers X")
    ax.set_yscale("log")
    ax.set_ylabel("M messages / s (log; bars: JMH 99.9% error)")
    ax.set_title("X:1 delivery, 65,536-slot queues (2-core machine)")
    ax.grid(alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(os.path.join(root, "delivery", "plot.png"), dpi=110)


if __name__ == "__main__":
    results = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "results")
    for report in (delivery_report, esg_report):
        try:
            report(results)
        except FileNotFoundError as e:
            print(f"skipped: {e}", file=sys.stderr)
