"""The elasticity benchmark's table and plot, from the JSON that MovePauseBench writes.

MovePauseBench (jvm/spark/src/test/scala/io/sharedstate/spark/cluster/MovePauseBench.scala) moves one
State partition of 10K, 100K and 1M keys between two hosts over Spark RPC, with and without pre-copy,
while a writer commits and a reader fetches, and times Spark's own way beside it (stop, then restart
from a fresh checkpoint with a new number of shuffle partitions: the state is rebuilt from the source).

usage: python benchmarks/elasticity/report.py [benchmarks/results/elasticity/moves.json]
writes moves.md (the table) and moves.png (the plot) next to the JSON.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def spread(xs: list[float]) -> str:
    """The median and the range of the runs."""
    return f"{statistics.median(xs):,.1f} ({min(xs):,.1f}-{max(xs):,.1f})"


def longest(m: dict) -> str:
    """The longest single fetch (medians of the runs): one fetcher, so a fetch the fence holds is one sample."""
    if "around_move_fetch_max_ms" not in m:
        return "-"
    return (
        f"{statistics.median(m['steady_fetch_max_ms']):,.1f} / {statistics.median(m['around_move_fetch_max_ms']):,.1f}"
    )


def held(m: dict) -> str:
    """How long the State's commits waited for the move (the last pre-copy round and the fence), and
    the longest stage-and-commit of the writer steady / around the move (medians of the runs)."""
    if "commits_held_ms" not in m:
        return "- | -"
    return (
        f"{spread(m['commits_held_ms'])} | {statistics.median(m['steady_commit_max_ms']):,.1f} / "
        f"{statistics.median(m['around_move_commit_max_ms']):,.1f}"
    )


def loads(data: dict) -> str:
    """The 1-minute load average at the moves (the box is shared)."""
    xs = [x for m in data["moves"] for x in m.get("load_average", [])]
    return f"load average at the moves: {min(xs):.1f}-{max(xs):.1f} (median {statistics.median(xs):.1f})" if xs else ""


def table(data: dict) -> str:
    restart = {r["keys"]: r["downtime_ms"] for r in data["spark_restart"]}
    lines = [
        "| keys in the partition | move | pause (fence), ms | whole call (pre-copy incl.), ms "
        "| fetch p99 steady, ms | fetch p99 around the move, ms | ratio | longest fetch steady / around, ms "
        "| commits held, ms | longest commit steady / around, ms "
        "| Spark: restart from a fresh checkpoint, ms |",
        "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for m in data["moves"]:
        ratio = [a / s for a, s in zip(m["around_move_fetch_p99_ms"], m["steady_fetch_p99_ms"])]
        lines.append(
            f"| {m['keys']:,} | {'pre-copy' if m['pre_copy'] else 'whole copy in the fence'} "
            f"| {spread(m['pause_ms'])} | {spread(m['call_ms'])} | {spread(m['steady_fetch_p99_ms'])} "
            f"| {spread(m['around_move_fetch_p99_ms'])} | {spread(ratio)}x | {longest(m)} | {held(m)} "
            f"| {spread(restart[m['keys']])} |"
        )
    return "\n".join(lines) + "\n" + (f"\n{loads(data)}\n" if loads(data) else "")


def plot(data: dict, png: Path) -> None:
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    restart = sorted((r["keys"], r["downtime_ms"]) for r in data["spark_restart"])
    for pre, label, marker in ((True, "sharedstate move, pre-copy: pause", "o"), (False, "whole copy: pause", "s")):
        rows = sorted((m["keys"], m["pause_ms"]) for m in data["moves"] if m["pre_copy"] == pre)
        ks = [k for k, _ in rows]
        left.errorbar(
            ks,
            [statistics.median(p) for _, p in rows],
            yerr=[
                [statistics.median(p) - min(p) for _, p in rows],
                [max(p) - statistics.median(p) for _, p in rows],
            ],
            marker=marker,
            capsize=3,
            label=label,
        )
    left.plot(
        [k for k, _ in restart],
        [statistics.median(d) for _, d in restart],
        marker="^",
        label="Spark: stop + restart, fresh checkpoint",
    )
    left.axhline(40, color="grey", linestyle=":", label="target: 40 ms (STRETCH)")
    left.set(xscale="log", yscale="log", xlabel="keys in the partition", ylabel="ms (median, range of 3)")
    left.set_title("time the partition's state is unavailable")
    left.legend(fontsize=7)
    for pre, hatch in ((True, ""), (False, "//")):
        rows = sorted((m["keys"], m) for m in data["moves"] if m["pre_copy"] == pre)
        xs = range(len(rows))
        off = -0.2 if pre else 0.2
        right.bar(
            [x + off - 0.1 for x in xs],
            [statistics.median(m["steady_fetch_p99_ms"]) for _, m in rows],
            0.2,
            hatch=hatch,
            color="tab:blue",
            label=f"steady ({'pre-copy' if pre else 'whole copy'})",
        )
        right.bar(
            [x + off + 0.1 for x in xs],
            [statistics.median(m["around_move_fetch_p99_ms"]) for _, m in rows],
            0.2,
            hatch=hatch,
            color="tab:orange",
            label=f"10 s around the move ({'pre-copy' if pre else 'whole copy'})",
        )
        right.set_xticks(list(xs), [f"{k:,}" for k, _ in rows])
    right.set(xlabel="keys in the partition", ylabel="fetch p99, ms (median of 3)")
    right.set_title("fetch latency p99")
    right.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(png, dpi=110)


def main() -> None:
    source = Path(sys.argv[1] if len(sys.argv) > 1 else "benchmarks/results/elasticity/moves.json")
    data = json.loads(source.read_text())
    text = table(data)
    source.with_suffix(".md").write_text(text)
    plot(data, source.with_suffix(".png"))
    print(text)


if __name__ == "__main__":
    main()
