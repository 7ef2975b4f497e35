"""table.md and plot.png of a state store benchmark run, from its statestore.json (see compare_providers.py)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from queries import QUERIES

ROWS = (
    ("batch_p50_ms", "batch p50 (ms)", "ms"),
    ("batch_p99_ms", "batch p99 (ms)", "ms"),
    ("add_batch_p50_ms", "addBatch p50 (ms)", "ms"),
    ("state_memory_bytes", "state memory (memoryUsedBytes)", "bytes"),
    ("rss_bytes", "JVM RSS after the query", "bytes"),
    ("checkpoint_bytes", "checkpoint on disk", "bytes"),
    ("recovery_ms", "recovery after kill -9 (ms)", "ms"),
)
# the targets for sharedstate's provider, as ratios to RocksDB's median; memory read both ways:
# each provider's own memoryUsedBytes (RocksDB's counts native memtables and cache, not what the query
# holds) and the driver's RSS
TARGETS = {"batch_p50_ms": 1.0, "batch_p99_ms": 1.0, "recovery_ms": 1.0, "state_memory_bytes": 1.5, "rss_bytes": 1.5}


def _fmt(v: float, unit: str) -> str:
    if unit == "bytes":
        return f"{v / 1e6:,.1f} MB" if v >= 1e5 else f"{v / 1e3:,.1f} kB"
    return f"{v:,.0f}"


def _cell(m: dict, unit: str, runs: int) -> str:
    if runs == 1:
        return _fmt(m["median"], unit)
    return f"{_fmt(m['median'], unit)} ({_fmt(m['min'], unit)} - {_fmt(m['max'], unit)})"


def targets(doc: dict) -> list[str]:
    """sharedstate's provider against the issue's targets, one row per query (ratios to RocksDB's medians)."""
    ratios = doc.get("ratios_to_rocksdb", {}).get("sharedstate")
    if not ratios:
        return []
    keys = list(TARGETS)
    lines = [
        "| query | " + " | ".join(f"{k} (target <= {TARGETS[k]})" for k in keys) + " |",
        "| --- " * (1 + len(keys)) + "|",
    ]
    for query in QUERIES:
        cells = []
        for k in keys:
            r = ratios[query][k]
            cells.append("-" if r is None else f"{r:.2f} ({'met' if r <= TARGETS[k] else 'missed'})")
        lines.append(f"| {query} | " + " | ".join(cells) + " |")
    return ["sharedstate / RocksDB, medians:", "", *lines, ""]


def table(doc: dict) -> str:
    meta, providers, summary = doc["meta"], doc["providers"], doc["summary"]
    ratios = doc.get("ratios_to_rocksdb", {})
    ran = [p for p in providers if providers[p]["available"]]
    loads = [r["providers"][p]["load_avg_before"][0] for r in doc["runs"] for p in r["providers"]]
    lines = [
        "# State store providers side by side (issue 22)",
        "",
        f"`{meta['command']}` at {meta['git_commit'][:7]}, {meta['started']} to {meta.get('finished', '?')};"
        f" {meta['runs']} run(s), {meta['mode']} sizes, local[2] on {meta['cpus']} cores; load average"
        f" (1 min) before each provider's run {min(loads):.1f} to {max(loads):.1f}.",
        "",
        f"Sizes: `{json.dumps(meta['sizes'])}`." + (f" {meta['note']}" if meta.get("note") else ""),
        "",
    ]
    for p, info in providers.items():
        if not info["available"]:
            lines += [f"**{p}: absent** ({info['absent_reason']}).", ""]
    lines += targets(doc)
    if meta["runs"] > 1:
        lines += ["Each cell: median over runs (min - max); ratio = median / RocksDB's median.", ""]
    for query in QUERIES:
        lines += [
            f"## {query}",
            "",
            "| metric | "
            + " | ".join(ran)
            + " | "
            + " | ".join(f"{p}/rocksdb" for p in ran if p != "rocksdb" and p in ratios)
            + " |",
        ]
        lines.append("| --- " * (1 + len(ran) + sum(p != "rocksdb" and p in ratios for p in ran)) + "|")
        for key, label, unit in ROWS:
            cells = [_cell(summary[p][query][key], unit, meta["runs"]) for p in ran]
            rs = []
            for p in ran:
                if p == "rocksdb" or p not in ratios:
                    continue
                r = ratios[p][query][key]
                mark = ""
                if p == "sharedstate" and key in TARGETS and r is not None:
                    mark = " (met)" if r <= TARGETS[key] else " (missed)"
                rs.append("-" if r is None else f"{r:.2f}{mark}")
            lines.append(f"| {label} | " + " | ".join(cells + rs) + " |")
        lines.append("")
        rows_at_end = ", ".join(f"{p} {doc['runs'][-1]['providers'][p]['queries'][query]['state_rows']:,}" for p in ran)
        lines += [f"State rows at the last measured batch (last run): {rows_at_end}.", ""]
    lines += [
        "Batch p50/p99: `durationMs.triggerExecution` over the steady batches after the first "
        f"{meta['sizes']['warmup_batches']}. State memory: the sum of `stateOperators[].memoryUsedBytes` at the "
        "last batch. RSS: the driver JVM's VmRSS after the query (the three queries run one after another in "
        "one JVM, so it is cumulative). Checkpoint: every file under the query's checkpoint after its last "
        "batch. Recovery: the three queries restarted together in a new JVM from the checkpoints a SIGKILL of "
        "the driver left, from `start()` to the end of the query's first batch.",
        "",
    ]
    return "\n".join(lines)


def plot(doc: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    providers, summary = doc["providers"], doc["summary"]
    ran = [p for p in providers if providers[p]["available"]]
    panels = [r for r in ROWS if r[0] != "add_batch_p50_ms"]
    fig, axes = plt.subplots(2, 3, figsize=(15, 8))
    width = 0.8 / max(len(ran), 1)
    for ax, (key, label, unit) in zip(axes.flat, panels):
        scale = 1e6 if unit == "bytes" else 1.0
        for i, p in enumerate(ran):
            med = [summary[p][q][key]["median"] / scale for q in QUERIES]
            lo = [med[j] - summary[p][q][key]["min"] / scale for j, q in enumerate(QUERIES)]
            hi = [summary[p][q][key]["max"] / scale - med[j] for j, q in enumerate(QUERIES)]
            xs = [j + (i - (len(ran) - 1) / 2) * width for j in range(len(QUERIES))]
            ax.bar(xs, med, width, yerr=[lo, hi], capsize=3, label=p)
        ax.set_xticks(range(len(QUERIES)), QUERIES)
        ax.set_title(label.replace("(ms)", "").strip() + (" (MB)" if unit == "bytes" else " (ms)"))
    axes.flat[0].legend()
    fig.suptitle(f"State store providers, median of {doc['meta']['runs']} run(s), bars min-max")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def write_report(out: Path) -> None:
    doc = json.loads((out / "statestore.json").read_text())
    (out / "table.md").write_text(table(doc))
    plot(doc, out / "plot.png")


if __name__ == "__main__":
    write_report(Path(sys.argv[1]))
