"""Report of an A/B of `durability_overhead.py`: runs `<dir>/<side>-<n>/overhead.json` of two sides,
the median (min-max) of each measure per side and the ratio of the medians, as `<dir>/table.md` and
`<dir>/plot.png`.

    .venv/bin/python benchmarks/durability/ab_report.py benchmarks/results/durability/fork-free-2026-11-29 old new
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

MEASURES = {
    "stream, in memory (s)": lambda d: d["stream_seconds"]["in_memory"],
    "stream, durable (s)": lambda d: d["stream_seconds"]["durable"],
    "snapshot round (s)": lambda d: d["snapshot_round_seconds"],
    "recovery, changelog only (s)": lambda d: d["recovery_seconds"]["changelog_only"],
    "recovery, snapshot + changelog (s)": lambda d: d["recovery_seconds"]["snapshot_plus_changelog"],
}


def runs(base: Path, side: str) -> list[dict]:
    found = sorted(base.glob(f"{side}-*/overhead.json"))
    if not found:
        raise SystemExit(f"no {side}-N/overhead.json under {base}")
    docs = [json.loads(p.read_text()) for p in found]
    for p, d in zip(found, docs):
        if not d.get("recovered_keys_match"):
            raise SystemExit(f"{p}: the recovered State differs from the stream's")
    return docs


def main(base: Path, a: str, b: str) -> None:
    sides = {a: runs(base, a), b: runs(base, b)}
    lines = [
        f"| measure | {a} median (min-max) | {b} median (min-max) | {b} / {a} |",
        "| --- | --- | --- | --- |",
    ]
    medians: dict[str, dict[str, float]] = {}
    for name, get in MEASURES.items():
        cells = []
        for side, docs in sides.items():
            values = [get(d) for d in docs]
            medians.setdefault(name, {})[side] = statistics.median(values)
            cells.append(f"{statistics.median(values):.2f} ({min(values):.2f}-{max(values):.2f})")
        ratio = medians[name][b] / medians[name][a]
        lines.append(f"| {name} | {cells[0]} | {cells[1]} | {ratio:.2f}x |")
    counts = ", ".join(f"{side}: {len(docs)} runs" for side, docs in sides.items())
    note = f"{counts}; every run's recovered State equal to its stream's."
    (base / "table.md").write_text("\n".join(lines) + f"\n\n{note}\n")
    fig, ax = plt.subplots(figsize=(8, 4))
    names = list(MEASURES)
    xs = range(len(names))
    width = 0.38
    for i, side in enumerate((a, b)):
        ax.bar([x + (i - 0.5) * width for x in xs], [medians[n][side] for n in names], width, label=side)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([n.replace(" (s)", "").replace(", ", ",\n") for n in names], fontsize=8)
    ax.set_ylabel("seconds (median)")
    ax.set_title("durability_overhead.py: 20 batches x 5,000 updates, local[2]")
    ax.legend()
    fig.tight_layout()
    fig.savefig(base / "plot.png", dpi=120)
    print((base / "table.md").read_text())


if __name__ == "__main__":
    if len(sys.argv) != 4:
        raise SystemExit(__doc__)
    main(Path(sys.argv[1]), sys.argv[2], sys.argv[3])
