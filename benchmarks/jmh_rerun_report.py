#!/usr/bin/env python3
"""A markdown table (scores and ratios against a baseline implementation) and a bar plot for one
JMH JSON result whose benchmarks have an `impl` parameter (one row per method and other parameters).

Usage: python benchmarks/jmh_rerun_report.py RESULT.json BASELINE_IMPL "title" "how it was run"
Writes RESULT.md and RESULT.png beside the JSON. Needs matplotlib.
"""

import json
import sys
from collections import defaultdict
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main(path: str, baseline: str, title: str, how: str) -> None:
    runs = json.loads(Path(path).read_text())
    rows = defaultdict(dict)  # other params -> impl -> (score, error)
    for run in runs:
        params = dict(run["params"])
        impl = params.pop("impl")
        method = run["benchmark"].rsplit(".", 1)[-1]
        key = ", ".join([method] + [f"{k}={v}" for k, v in sorted(params.items())])
        metric = run["primaryMetric"]
        rows[key][impl] = (metric["score"] / 1e6, metric["scoreError"] / 1e6)
    impls = list(dict.fromkeys(r["params"]["impl"] for r in runs))
    lines = [
        f"# {title}",
        "",
        how,
        "",
        "Scores in millions of operations per second (± JMH 99.9% error).",
        "",
        "| config | "
        + " | ".join(impls)
        + " | "
        + " | ".join(f"{i} / {baseline}" for i in impls if i != baseline)
        + " |",
        "| --- | "
        + " | ".join("---:" for _ in impls)
        + " | "
        + " | ".join("---:" for i in impls if i != baseline)
        + " |",
    ]
    for key, scores in rows.items():
        cells = [f"{scores[i][0]:.2f} ± {scores[i][1]:.2f}" for i in impls]
        ratios = [f"{scores[i][0] / scores[baseline][0]:.2f}x" for i in impls if i != baseline]
        lines.append(f"| {key} | " + " | ".join(cells) + " | " + " | ".join(ratios) + " |")
    out = Path(path).with_suffix("")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")

    fig, ax = plt.subplots(figsize=(2 + 2.2 * len(rows), 4))
    width = 0.8 / len(impls)
    for n, impl in enumerate(impls):
        xs = [k + n * width for k in range(len(rows))]
        ax.bar(
            xs,
            [s[impl][0] for s in rows.values()],
            width,
            yerr=[s[impl][1] for s in rows.values()],
            capsize=3,
            label=impl,
        )
    ax.set_xticks([k + width * (len(impls) - 1) / 2 for k in range(len(rows))], list(rows))
    ax.set_ylabel("M ops / s")
    ax.set_title(title + " (2-core machine)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out.with_suffix(".png"), dpi=110)


if __name__ == "__main__":
    main(*sys.argv[1:5])
