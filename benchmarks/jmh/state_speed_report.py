"""Medians and spread of repeated runs of `state_speed_run.sh`, main's engine beside a branch's.

    python benchmarks/jmh/state_speed_report.py RUNS_DIR OUT_PREFIX "how it was run"

RUNS_DIR holds one directory per run, named `<who>-<n>` (e.g. main-1, branch-2), each with what
state_speed_run.sh writes: fetch.json, batch.json, apply.json (JMH), footprint.jsonl, cpu.jsonl
(CpuTimeThroughput) and loads.txt. A run's JMH score is JMH's (the mean of its measured iterations);
a run's CPU-time score is the median of its measured rounds; the table gives, per who and benchmark,
the median over runs and the range. Writes OUT_PREFIX.json (every score and load), OUT_PREFIX.md (the
table) and OUT_PREFIX.png (the plot). Needs matplotlib.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

JMH = {"fetch": "fetch `latest` one at a time", "batch": "fetch `latest` in chunks of 4096", "apply": "apply 1M x 8"}


def jmh_scores(run: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    for bench, title in JMH.items():
        f = run / f"{bench}.json"
        if not f.exists():
            continue
        for r in json.loads(f.read_text()):
            params = dict(r.get("params", {}))
            if bench == "batch":
                params.setdefault("callerKeys", "scattered")  # main's FetchBatchBenchmark had no such parameter
            label = ", ".join(f"{v}" for _, v in sorted(params.items(), key=lambda kv: kv[0] != "impl"))
            out[f"JMH {title}: {label}"] = r["primaryMetric"]["score"]
    return out


def cpu_scores(run: Path) -> dict[str, float]:
    f = run / "cpu.jsonl"
    if not f.exists():
        return {}
    rows = [json.loads(line) for line in f.read_text().splitlines() if line.startswith("{")]
    by: dict[str, list[float]] = {}
    for r in rows:
        if not r["warmup"]:
            by.setdefault(f"per CPU-second: {r['what']}", []).append(r["ops_per_cpu_s"])
    return {k: statistics.median(v) for k, v in by.items()}


def footprint(run: Path) -> dict[str, float]:
    f = run / "footprint.jsonl"
    if not f.exists():
        return {}
    rows = [json.loads(line) for line in f.read_text().splitlines() if line.startswith("{")]
    return {f"heap / raw bytes: {r['impl']}": r["ratio"] for r in rows}


def loads(run: Path) -> list[str]:
    f = run / "loads.txt"
    return f.read_text().splitlines() if f.exists() else []


def main() -> int:
    runs_dir, prefix, how = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
    data: dict[str, dict[str, list[float]]] = {}
    raw: dict[str, dict] = {}
    for run in sorted(p for p in runs_dir.iterdir() if p.is_dir() and "-" in p.name):
        who = run.name.rsplit("-", 1)[0]
        scores = {**jmh_scores(run), **cpu_scores(run), **footprint(run)}
        raw[run.name] = {"scores": scores, "loads": loads(run)}
        for k, v in scores.items():
            data.setdefault(k, {}).setdefault(who, []).append(v)
    whos = sorted({w for by in data.values() for w in by}, key=lambda w: (w != "main", w))

    def cell(xs: list[float] | None, ratio: bool) -> str:
        if not xs:
            return ""
        m = statistics.median(xs)
        if ratio:
            return f"{m:.3f}x ({min(xs):.3f}-{max(xs):.3f}, {len(xs)})"
        return f"{m / 1e6:.2f} M ({min(xs) / 1e6:.2f}-{max(xs) / 1e6:.2f}, {len(xs)})"

    lines = [f"# State engine speed: {how}", "", "Median over runs (min-max, runs); scores in millions per second.", ""]
    lines.append("| benchmark | " + " | ".join(whos) + " |")
    lines.append("| --- | " + " | ".join("---" for _ in whos) + " |")
    for k in sorted(data):
        ratio = k.startswith("heap")
        lines.append(f"| {k} | " + " | ".join(cell(data[k].get(w), ratio) for w in whos) + " |")
    lines += ["", "Load averages (1, 5, 15 min) before and after each step:", ""]
    for name, r in raw.items():
        lines.append(f"- {name}: " + "; ".join(r["loads"]))
    prefix.with_suffix(".md").write_text("\n".join(lines) + "\n")
    prefix.with_suffix(".json").write_text(json.dumps({"how": how, "runs": raw}, indent=1))

    keys = [k for k in sorted(data) if not k.startswith("heap") and "engine" in k or k.startswith("per CPU")]
    fig, ax = plt.subplots(figsize=(10, 0.35 * len(keys) + 1.5))
    for i, k in enumerate(keys):
        for j, w in enumerate(whos):
            xs = data[k].get(w)
            if xs:
                y = i + 0.35 * j
                ax.plot([min(xs) / 1e6, max(xs) / 1e6], [y, y], color=f"C{j}")
                ax.plot(statistics.median(xs) / 1e6, y, "o", color=f"C{j}", label=w if i == 0 else None)
    ax.set_yticks(range(len(keys)))
    ax.set_yticklabels(keys, fontsize=7)
    ax.axvline(5, ls=":", color="grey")
    ax.axvline(2, ls=":", color="grey")
    ax.set_xlabel("M per second (dotted: the 2 M apply and 5 M fetch targets)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(prefix.with_suffix(".png"), dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
