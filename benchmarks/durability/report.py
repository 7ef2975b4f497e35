"""table.md and plot.png of the snapshot/recovery benchmark, from snapshot_recovery.json."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

# The numbers compared in the summary of repeated runs: (label, sharedstate key, RocksDB key).
SUMMARY = [
    ("snapshot (s; rocks: its zip's upload only)", "ss_snapshot", "rocks_snapshot_upload"),
    # Like with like: RocksDB's snapshot is also its flush and checkpoint, done inside the batch's
    # commit (summed over its partitions, which ran two at a time on 2 cores), before the upload.
    ("snapshot (s; rocks: flush + checkpoint summed + upload)", "ss_snapshot", "rocks_snapshot_all"),
    # A round on change (spark.sharedstate.snapshot.afterUpdates) may take the snapshot during the load,
    # beside the writers; the explicit round after it then has nothing left to write.
    (
        "snapshot incl. rounds during the load (s; ss: their rounds' time + the explicit one; rocks: as above)",
        "ss_snapshot_all",
        "rocks_snapshot_all",
    ),
    ("snapshot round only (s; ss: snapshot_ms; rocks: upload)", "ss_snapshot_round", "rocks_snapshot_upload"),
    ("recovery (s)", "ss_recover", "rocks_recover_batch"),
    ("load K keys (s)", "ss_load", "rocks_load"),
    # Load and snapshot as a whole: RocksDB writes its SST files during the load (memtable flushes) and
    # flushes the last memtable in the commit; a sharedstate bulk load leaves everything to the round.
    ("load + snapshot (s; rocks: load batch + upload)", "ss_load_and_snapshot", "rocks_load_and_snapshot"),
    ("bytes on disk (MB)", "ss_bytes_mb", "rocks_bytes_mb"),
]


def _first_batch(phase: dict) -> dict:
    b = phase["batches"][0] if phase.get("batches") else {}
    ops = b.get("stateOperators") or [{}]
    return {
        "trigger_s": b.get("durationMs", {}).get("triggerExecution", 0) / 1000,
        "commit_s": ops[0].get("commitTimeMs", 0) / 1000,
        "custom": ops[0].get("customMetrics", {}),
        "rows": ops[0].get("numRowsTotal"),
    }


def rows(size: dict) -> dict:
    """The compared numbers of one key count (seconds; RocksDB's custom metrics are sums over partitions)."""
    ss_load, ss_rec = size["ss_load"], size["ss_recover"]
    r = {
        "ss_load": ss_load["load_s"],
        "ss_snapshot": ss_load["snapshot_s"],
        "ss_snapshot_round": ss_load["snapshot_result"].get("snapshot_ms", 0) / 1000,
        "ss_tail": ss_load["tail_s"],
        "ss_recover": ss_rec["recover_s"],
        "ss_bytes": ss_load["bytes"],
        "ss_keys": ss_rec["keys"],
        "ss_correct": size["ss_correct"],
        "load_avg": [
            size[p]["load_avg_before"][0] for p in ("ss_load", "ss_recover", "rocks_load", "rocks_recover") if p in size
        ],
    }
    r["ss_bytes_mb"] = sum(ss_load["bytes"].values()) / 1e6
    r["ss_load_and_snapshot"] = r["ss_load"] + r["ss_snapshot"]
    r["ss_snapshot_all"] = r["ss_snapshot"] + sum(x["snapshot_ms"] for x in ss_load.get("rounds_in_load", [])) / 1000
    if "rocks_load" not in size:
        return r
    rl, rt, rr = _first_batch(size["rocks_load"]), _first_batch(size["rocks_tail"]), _first_batch(size["rocks_recover"])
    ms = lambda b, name: b["custom"].get(name, 0) / 1000  # noqa: E731
    r.update(
        {
            "rocks_load": size["rocks_load"]["load_s"],
            "rocks_load_commit": rl["commit_s"],
            "rocks_snapshot_in_commit": ms(rl, "rocksdbCommitFlushLatency") + ms(rl, "rocksdbCommitCheckpointLatency"),
            "rocks_snapshot_upload": size["rocks_load"].get("snapshot_upload_after_commit_s")
            or size["rocks_load"]["snapshot_upload_after_batch_s"],
            "rocks_tail_batch": rt["trigger_s"],
            "rocks_tail_commit": rt["commit_s"],
            "rocks_recover_batch": rr["trigger_s"],
            "rocks_recover_wall": size["rocks_recover"]["wall_s"],
            "rocks_recover_load_wall": size["rocks_recover"]["rocksdb_load"]["wall_s"],
            "rocks_recover_load_max": size["rocks_recover"]["rocksdb_load"]["max_s"],
            "rocks_replayed": sorted(
                {
                    (p["snapshot_version"], p["changelogs_replayed"])
                    for p in size["rocks_recover"]["rocksdb_load"]["partitions"].values()
                }
            ),
            "rocks_bytes": size["rocks_recover"].get("bytes", size["rocks_load"]["bytes"]),
            "rocks_keys": rr["rows"],
        }
    )
    r["rocks_bytes_mb"] = r["rocks_bytes"] / 1e6
    r["rocks_snapshot_all"] = r["rocks_snapshot_upload"] + r["rocks_snapshot_in_commit"]
    r["rocks_load_and_snapshot"] = r["rocks_load"] + r["rocks_snapshot_upload"]
    return r


def _spread(xs: list[float], digits: int = 1) -> str:
    f = lambda x: f"{x:.{digits}f}"  # noqa: E731
    return f"{f(statistics.median(xs))} ({f(min(xs))}-{f(max(xs))})" if len(xs) > 1 else f(xs[0])


def summary(data: dict) -> list[str]:
    """Per key count run more than once: the median (min-max) of each compared number, and of its ratio."""
    by_keys: dict[int, list[dict]] = {}
    for size in data["sizes"]:
        by_keys.setdefault(size["keys"], []).append(rows(size))
    lines = [
        "| keys | runs | measure | sharedstate median (min-max) | RocksDB median (min-max) "
        "| ratio ss/rocks median (min-max) |",
        "| --- | --- | --- | --- | --- | --- |",
    ]
    for keys, runs in by_keys.items():
        if len(runs) < 2:
            continue
        for label, a, b in SUMMARY:
            ss = [r[a] for r in runs]
            rocks = [r[b] for r in runs if b in r]
            ratios = [r[a] / r[b] for r in runs if r.get(b)]
            lines.append(
                f"| {keys:,} | {len(runs)} | {label} | {_spread(ss)} | {_spread(rocks) if rocks else 'not run'} | "
                f"{_spread(ratios, 2) if ratios else '-'} |"
            )
    return lines if len(lines) > 2 else []


def write_report(out: Path) -> None:
    data = json.loads((out / "snapshot_recovery.json").read_text())
    lines = summary(data)
    if lines:
        lines += ["", "Each run:", ""]
    lines += [
        "| keys | measure | sharedstate (Delta) | Spark RocksDB + changelog | ratio ss/rocks |",
        "| --- | --- | --- | --- | --- |",
    ]
    table = []
    for size in data["sizes"]:
        r = rows(size)
        table.append((size["keys"], r))
        k = f"{size['keys']:,}" + (f" (run {size['run'] + 1})" if "run" in size else "")
        rocks = "rocks_load" in r

        def line(what, a, b, note="", k=k, rocks=rocks):  # this size's k and rocks
            ratio = f"{a / b:.2f}" if rocks and a and b else "-"
            cell = f"{b:.1f} s{note}" if rocks else "not run"
            lines.append(f"| {k} | {what} | {a:.1f} s | {cell} | {ratio} |")

        in_load = "; ".join(
            f"{x['trigger']}: {x['snapshot_ms'] / 1000:.1f} s, {x['entries']:,} entries, "
            f"writers waited {x['capture_ms'] / 1000:.3f} s"
            for x in size["ss_load"].get("rounds_in_load", [])
        )
        rocks_flush = (
            f"{r['rocks_snapshot_in_commit']:.1f} s flush + checkpoint inside the commit, summed over partitions"
            if rocks
            else ""
        )
        lines.append(
            f"| {k} | snapshot work inside the load (ss: rounds on change, spark.sharedstate.snapshot.afterUpdates) "
            f"| {in_load or 'none'} | {rocks_flush} | |"
        )
        line("load K keys (one bulk load / one micro-batch)", r["ss_load"], r.get("rocks_load"))
        line(
            "snapshot (ss: snapshot round; rocks: a partition's commit until its zip is uploaded, slowest partition)",
            r["ss_snapshot"],
            r.get("rocks_snapshot_upload"),
            f" (+ {r['rocks_snapshot_in_commit']:.1f} s flush + checkpoint inside the commit, summed over partitions)"
            if rocks
            else "",
        )
        sr = size["ss_load"]["snapshot_result"]
        lines.append(
            f"| {k} | the full round's parts (ss, summed over 4 partitions run 2 at a time) | writers waited "
            f"(commit lock held) {sr.get('capture_ms', 0) / 1000:.3f} s, lock wait "
            f"{sr.get('lock_wait_ms', 0) / 1000:.3f} s, encode "
            f"{sr.get('encode_ms', 0) / 1000:.1f} s, write + commit {sr.get('write_ms', 0) / 1000:.1f} s; round "
            f"{sr.get('snapshot_ms', 0) / 1000:.1f} s + retention {sr.get('retention_ms', 0) / 1000:.1f} s; "
            f"{sr.get('bytes', 0) / 1e6:.0f} MB encoded | | |"
        )
        line(
            "load + snapshot (ss: bulk load + round; rocks: load batch, its flushes inside, + upload)",
            r["ss_load_and_snapshot"],
            r.get("rocks_load_and_snapshot"),
        )
        line("tail K/10 updates (bulk load / restart + batch)", r["ss_tail"], r.get("rocks_tail_batch"))
        line(
            "recovery (ss: State.get; rocks: first batch after restart)",
            r["ss_recover"],
            r.get("rocks_recover_batch"),
            f" (RocksDB load, first 'Loading' to last 'Loaded': {r['rocks_recover_load_wall']:.1f} s, "
            "slowest partition "
            f"{r['rocks_recover_load_max']:.1f} s; (snapshot version, changelogs replayed) per partition: "
            f"{', '.join(map(str, r['rocks_replayed']))})"
            if rocks
            else "",
        )
        rocks_keys = f"{r['rocks_keys']:,}" if rocks else ""
        rocks_bytes = f"{r['rocks_bytes'] / 1e6:.0f} MB" if rocks else ""
        lines.append(
            f"| {k} | keys after recovery; sample correct | {r['ss_keys']:,}; {r['ss_correct']} | {rocks_keys} | |"
        )
        lines.append(
            f"| {k} | bytes on disk | {r['ss_bytes_mb']:.0f} MB "
            f"({', '.join(f'{n} {b / 1e6:.0f}' for n, b in r['ss_bytes'].items())}) | {rocks_bytes} | |"
        )
        rec = size["ss_recover"]
        for name, what in (
            ("delta_after_tail", "delta snapshot round after recovery (the tail's K/10 keys)"),
            ("delta_1pct", "delta snapshot round after a 1% change (K/100 updates)"),
        ):
            if name in rec:
                d = rec[name]
                lines.append(
                    f"| {k} | {what} | {rec[name + '_s']:.1f} s (snapshots {d.get('snapshot_ms', 0) / 1000:.1f} s, "
                    f"retention {d.get('retention_ms', 0) / 1000:.1f} s, of it writers waited "
                    f"{d.get('trim_lock_ms', 0) / 1000:.3f} s for the changelog trim's commit); "
                    f"{d['deltas']} of {d['written']} deltas, "
                    f"{d['entries']:,} entries, {d['bytes'] / 1e6:.1f} MB (full round: "
                    f"{size['ss_load']['snapshot_result'].get('bytes', 0) / 1e6:.0f} MB) | | |"
                )
        lines.append(
            f"| {k} | load average (1 min) at ss-load, ss-recover, rocks-load, rocks-recover | "
            f"{', '.join(f'{x:.1f}' for x in r['load_avg'])} | | |"
        )
    (out / "table.md").write_text("\n".join(lines) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    medians: dict[int, dict] = {}
    for k, r in table:
        medians.setdefault(k, []).append(r)
    table = [
        (k, {n: statistics.median([r.get(n, 0) for r in rs]) for n in rs[0] if isinstance(rs[0][n], (int, float))})
        for k, rs in medians.items()
    ]
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.8))
    for ax, (title, a, b) in zip(
        axes,
        [
            ("snapshot (ss: incl. rounds during the load)", "ss_snapshot_all", "rocks_snapshot_upload"),
            ("recovery", "ss_recover", "rocks_recover_batch"),
            ("load K keys", "ss_load", "rocks_load"),
        ],
    ):
        xs = [f"{k / 1e6:g}M" for k, _ in table]
        w = 0.38
        ax.bar([i - w / 2 for i in range(len(xs))], [r[a] for _, r in table], w, label="sharedstate (Delta)")
        ax.bar(
            [i + w / 2 for i in range(len(xs))], [r.get(b, 0) for _, r in table], w, label="Spark RocksDB + changelog"
        )
        if a == "ss_snapshot_all":  # RocksDB's snapshot also costs its flush + checkpoint inside the commit
            ax.bar(
                [i + w / 2 for i in range(len(xs))],
                [max(r.get("rocks_snapshot_all", 0) - r.get(b, 0), 0) for _, r in table],
                w,
                bottom=[r.get(b, 0) for _, r in table],
                fill=False,
                hatch="//",
                label="RocksDB: its flush + checkpoint in the commit",
            )
        ax.set_xticks(range(len(xs)), xs)
        ax.set_title(title)
        ax.set_ylabel("seconds")
    axes[0].legend(fontsize=8)
    loads = [x for size in data["sizes"] for x in rows(size).get("load_avg", [])]
    busy = f"load average {min(loads):.1f}-{max(loads):.1f}" if loads else "load not recorded"
    fig.suptitle(f"Snapshot and recovery (median of the runs), 2-core VM, {busy} at the phases", fontsize=10)
    fig.tight_layout()
    fig.savefig(out / "plot.png", dpi=110)
