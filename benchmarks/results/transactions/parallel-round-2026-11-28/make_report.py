import json, statistics, sys
from pathlib import Path
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
OUT = Path("/work/wt-txn5/benchmarks/results/transactions/parallel-round-2026-11-28")
SIDES = ["before", "after", "after-parallel"]
scores = {}  # (app, impl, threads, side) -> [run scores]
for side in SIDES:
    for run in (1, 2, 3):
        f = OUT / f"{side}-{run}.json"
        if not f.exists(): continue
        for r in json.loads(f.read_text()):
            p = r["params"]
            scores.setdefault((p["app"], p["impl"], int(p["threads"]), side), []).append(r["primaryMetric"]["score"])
summary = []
for (app, impl, th, side), v in sorted(scores.items()):
    summary.append({"app": app, "impl": impl, "threads": th, "side": side, "runs": v, "median": statistics.median(v)})
(OUT / "ab.json").write_text(json.dumps(summary, indent=1))
med = {(s["app"], s["impl"], s["threads"], s["side"]): s for s in summary}
def cell(k):
    s = med.get(k)
    if not s: return "-"
    return f"{s['median']/1e3:.0f}K ({min(s['runs'])/1e3:.0f}-{max(s['runs'])/1e3:.0f})"
rows = ["| app / impl | threads | before (e03a917) | after | after, every round in parts | after/before |", "| --- | --- | --- | --- | --- | --- |"]
for app in ("sl", "tp"):
    for impl in ("engine", "lock"):
        for th in (1, 2):
            b = med.get((app, impl, th, "before")); a = med.get((app, impl, th, "after"))
            ratio = f"{a['median']/b['median']:.2f}x" if a and b else "-"
            rows.append(f"| {app}/{impl} | {th} | {cell((app,impl,th,'before'))} | {cell((app,impl,th,'after'))} | {cell((app,impl,th,'after-parallel'))} | {ratio} |")
ratios = []
for app in ("sl", "tp"):
    for th in (1, 2):
        parts = []
        for side in SIDES:
            e = med.get((app, "engine", th, side)); l = med.get((app, "lock", th, "after" if side == "after-parallel" else side))
            if e and l: parts.append(f"{side} {e['median']/l['median']:.2f}x")
        ratios.append(f"- {app.upper()} at {th} thread(s), engine / LOCK (medians; after-parallel against the after runs' LOCK): " + ", ".join(parts))
(OUT / "table.md").write_text("\n".join(rows) + "\n\n" + "\n".join(ratios) + "\n")
print("\n".join(rows)); print("\n".join(ratios))
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
for ax, app in zip(axes, ("sl", "tp")):
    labels, vals, errs = [], [], []
    for impl in ("engine", "lock"):
        for th in (1, 2):
            for side in SIDES:
                s = med.get((app, impl, th, side))
                if not s: continue
                labels.append(f"{impl}\n{th}t\n{side.replace('after-parallel','parts')}")
                vals.append(s["median"] / 1e6)
                errs.append([[ (s["median"] - min(s["runs"])) / 1e6], [(max(s["runs"]) - s["median"]) / 1e6]])
    x = range(len(vals))
    ax.bar(x, vals, yerr=[[e[0][0] for e in errs], [e[1][0] for e in errs]], capsize=3,
           color=["#888" if "before" in l else ("#c63" if "parts" in l else "#36c") for l in labels])
    ax.set_xticks(list(x)); ax.set_xticklabels(labels, fontsize=6)
    ax.set_title(f"{app.upper()}: transactions/s (median, min-max of 3 runs)"); ax.set_ylabel("M txn/s")
fig.tight_layout(); fig.savefig(OUT / "ab.png", dpi=120)
