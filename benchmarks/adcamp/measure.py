"""What a point's sink holds, checked against the offline oracle, and how fast it got there.

Every method appends its enriched views to a Delta table. A row becomes visible when its commit's log
file (`_delta_log/<version>.json`) is written, so a row's visible time is that file's modification
time, and its latency is that minus the time its input file appeared (the feeder's record).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from urllib.parse import unquote

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from sharedstate.testing.adcamp import SECOND, accepted_updates, expected_late
from workload import BASE_US, Staged, as_workload

NULL = -1  # campaign / campaign time of a view no update covers


@dataclass
class Expected:
    campaign: np.ndarray  # by event_id; NULL where the oracle gives no campaign
    campaign_time: np.ndarray  # microseconds; NULL likewise
    late_updates: int
    accepted_updates: int


def expected(staged: Staged) -> Expected:
    """The as-of join over the whole accepted update history, cached: the demo's oracle helpers decide
    which updates are late (the updates are few), the views are joined file by file (`asof_campaigns`),
    so a point of hundreds of millions of views is never whole in memory."""
    path = staged.directory / "oracle.npz"
    if not path.exists():
        work = as_workload(staged, events=False)
        late = expected_late(work)
        accepted = accepted_updates(work)
        campaign, micros = asof_campaigns(staged, accepted)
        np.savez(
            path.with_suffix(".tmp.npz"),
            campaign=campaign,
            campaign_time=micros,
            late=len(late),
            accepted=len(accepted),
        )
        path.with_suffix(".tmp.npz").replace(path)
    data = np.load(path)
    return Expected(data["campaign"], data["campaign_time"], int(data["late"]), int(data["accepted"]))


# Below every time of a point: an (ad, time) pair is one int64, the ad above 40 bits of microseconds
# (12.7 days) since this origin, so the as-of search is one sorted array and numpy's searchsorted.
_ORIGIN_US = BASE_US - 3600 * SECOND


def _pair_keys(ad: np.ndarray, micros: np.ndarray) -> np.ndarray:
    return (ad.astype(np.int64) << 40) | (micros - _ORIGIN_US)


def _micros(column: pa.ChunkedArray) -> np.ndarray:
    """A timestamp column (any unit) as int64 UTC microseconds, nulls as NULL."""
    return pc.fill_null(column.cast(pa.timestamp("us", tz="UTC")).cast(pa.int64()), NULL).to_numpy()


def asof_campaigns(staged: Staged, accepted: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Per measured view (by event_id): the campaign of the latest accepted update of its ad at or
    before its time, and that update's time; NULL for both where there is none (what merge_asof's
    backward search with exact matches gives, and the demo's `oracle`)."""
    ad = accepted["ad_id"].to_numpy(np.int64)
    times = pd.to_datetime(accepted["ts"], utc=True).astype("datetime64[us, UTC]").astype("int64").to_numpy()
    keys = _pair_keys(ad, times)
    order = np.argsort(keys, kind="stable")
    keys, ad, times = keys[order], ad[order], times[order]
    campaigns = accepted["campaign"].to_numpy(np.int16)[order]
    n = staged.measured_events
    campaign = np.full(n, NULL, dtype=np.int16)
    campaign_time = np.full(n, NULL, dtype=np.int64)
    for f in staged.event_files[: staged.shape.measured_slots]:
        t = pq.read_table(f, columns=["event_id", "ad_id", "ts"])
        if t.num_rows == 0:
            continue
        ids = t.column("event_id").to_numpy()
        view_ad = t.column("ad_id").to_numpy()
        j = np.searchsorted(keys, _pair_keys(view_ad, _micros(t.column("ts"))), side="right") - 1
        hit = (j >= 0) & (ad[np.maximum(j, 0)] == view_ad)
        campaign[ids[hit]] = campaigns[j[hit]]
        campaign_time[ids[hit]] = times[j[hit]]
    return campaign, campaign_time


def _commits(table: Path) -> list[tuple[Path, float, list[str]]]:
    """(log file, visible time, added files) per commit of a Delta table, in version order."""
    out = []
    log = table / "_delta_log"
    for commit in sorted(log.glob("*.json")) if log.is_dir() else []:
        try:
            mtime = commit.stat().st_mtime
            adds = [unquote(a["add"]["path"]) for a in map(json.loads, commit.read_text().splitlines()) if "add" in a]
        except (FileNotFoundError, json.JSONDecodeError):  # a commit being written
            continue
        out.append((commit, mtime, adds))
    return out


class SinkCounter:
    """Rows with event_id below a bound committed so far; reads each new commit's files once."""

    def __init__(self, table: Path, below: int):
        self.table, self.below = table, below
        self.counted: dict[str, int] = {}

    def __call__(self) -> int:
        for commit, _, adds in _commits(self.table):
            if commit.name not in self.counted:
                n = 0
                for rel in adds:
                    ids = pq.read_table(self.table / rel, columns=["event_id"]).column(0).to_numpy()
                    n += int(np.count_nonzero(ids < self.below))
                self.counted[commit.name] = n
        return sum(self.counted.values())


@dataclass
class SinkRows:
    event_id: np.ndarray
    campaign: np.ndarray
    campaign_time: np.ndarray
    visible: np.ndarray


def read_sink(table: Path) -> SinkRows:
    """Every row of the sink as numpy columns (straight from Arrow: no DataFrame of every row)."""
    ids, campaigns, times, visibles = [], [], [], []
    for _, visible, adds in _commits(table):
        for rel in adds:
            t = pq.read_table(table / rel, columns=["event_id", "campaign", "campaign_time"])
            if t.num_rows == 0:
                continue
            ids.append(t.column("event_id").to_numpy().astype(np.int64, copy=False))
            campaigns.append(pc.fill_null(t.column("campaign"), NULL).to_numpy().astype(np.int64, copy=False))
            times.append(_micros(t.column("campaign_time")))
            visibles.append(np.full(t.num_rows, visible))
    if not ids:
        empty = np.zeros(0, dtype=np.int64)
        return SinkRows(empty, empty, empty, np.zeros(0))
    return SinkRows(np.concatenate(ids), np.concatenate(campaigns), np.concatenate(times), np.concatenate(visibles))


def processed_rate(fed: np.ndarray, visible: np.ndarray, offered: float) -> float | None:
    """Views per second a method put out while they arrived at `offered` per second: `offered` over the
    least-squares slope of each view's visible time against its arrival time. A method that keeps up
    has slope 1 whatever its latency, however its micro-batches cut the output into steps (a step
    function follows its line on average over every view, unlike a span between two percentiles,
    which moves by a whole batch when one batch falls on the other side); one that falls behind
    stretches its output out (slope > 1). None when the views came out in fewer than 3 steps (batches):
    a line through one or two steps says nothing about a rate (an aborted point's few early batches
    would fit a slope near 0, i.e. an absurd rate)."""
    if len(fed) <= 10 or np.ptp(fed) <= 0 or len(np.unique(visible)) < 3:
        return None
    slope = float(np.polyfit(fed, visible, 1)[0])
    return float(offered / max(slope, 1e-9))


@dataclass
class PointResult:
    method: str
    update_rate: int
    event_rate: int
    events: int
    output_rows: int
    missing: int
    duplicates: int
    wrong: int  # rows whose campaign or campaign time differs from the oracle
    correct: bool
    p50_ms: float | None
    p99_ms: float | None
    max_ms: float | None
    p99_all_ms: float | None  # including the first quarter (a fresh query's first batches)
    latency_growth_ms: float | None  # median latency, last quarter minus second quarter of the views
    processed_rate: float | None  # views made visible per second in the steady part of the run
    sustained: bool
    verdict: str
    aborted: bool = False
    attempt: int = 1  # the search's retry of a point that came out right but not sustained
    discarded: bool = False  # an attempt a retry replaced
    feeder_behind_ms: float = 0.0
    load_avg_1m: float = 0.0
    wall_s: float = 0.0
    progress: dict | None = None

    def to_json(self) -> dict:
        return asdict(self)


def evaluate(
    method: str,
    staged: Staged,
    exp: Expected,
    sink: Path,
    visible_at: list[float],
    feed_start: float,
    aborted: bool,
    lag_cap_s: float,
) -> PointResult:
    shape = staged.shape
    rows = read_sink(sink)
    n = staged.measured_events
    fed_views = int(staged.event_slot_starts[len(visible_at)]) if visible_at else 0
    keep = rows.event_id < n  # the tail's views only keep the streams going
    extra = int(np.count_nonzero(rows.event_id >= fed_views))  # rows for views that were never fed
    rows = SinkRows(rows.event_id[keep], rows.campaign[keep], rows.campaign_time[keep], rows.visible[keep])
    ids = rows.event_id
    unique, first = np.unique(ids, return_index=True)
    duplicates = int(len(ids) - len(unique))
    missing = int(n - len(unique))
    take = first
    wrong = int(
        np.count_nonzero(
            (rows.campaign[take] != exp.campaign[unique]) | (rows.campaign_time[take] != exp.campaign_time[unique])
        )
    )
    wrong += extra  # rows for ids that were never fed
    # Missing rows are wrong only when the run was given its full time (an aborted point is just slow).
    correct = duplicates == 0 and wrong == 0 and (missing == 0 or aborted)

    p50 = p99 = mx = p99_all = growth = rate = None
    if len(take):
        slot = np.searchsorted(staged.event_slot_starts, ids[take], side="right") - 1
        fed = np.asarray(visible_at)[np.minimum(slot, len(visible_at) - 1)]
        latency = rows.visible[take] - fed
        span = shape.measured_slots * shape.slot_s
        rel = fed - feed_start
        # Percentiles of the steady part: the first quarter holds a fresh query's first, slow batch.
        steady = latency[rel >= span * 0.25] if np.any(rel >= span * 0.25) else latency
        p50, p99 = (float(np.percentile(steady, q)) * 1000 for q in (50, 99))
        mx = float(latency.max()) * 1000
        p99_all = float(np.percentile(latency, 99)) * 1000
        q2 = latency[(rel >= span * 0.25) & (rel < span * 0.5)]
        q4 = latency[rel >= span * 0.75]
        if len(q2) and len(q4):
            growth = float(np.median(q4) - np.median(q2)) * 1000
        steady_rows = rel >= span * 0.25
        rate = processed_rate(rel[steady_rows], rows.visible[take][steady_rows], shape.event_rate)

    growth_limit_ms = 500 + (0.25 * p50 if p50 else 0)
    reasons = []
    if aborted:
        reasons.append("aborted: output fell too far behind or did not drain in time")
    if missing:
        reasons.append(f"{missing} views never written")
    if growth is not None and growth > growth_limit_ms:
        reasons.append(f"latency grew {growth:.0f} ms")
    if p99 is not None and p99 > lag_cap_s * 1000:
        reasons.append(f"p99 {p99:.0f} ms above the {lag_cap_s:g} s cap")
    if rate is not None and rate < 0.9 * shape.event_rate:
        reasons.append(f"processed {rate:.0f}/s < 0.9 x offered")
    sustained = not reasons
    if not correct:
        reasons.append(f"WRONG: {missing} missing, {duplicates} duplicate, {wrong} wrong rows")
    return PointResult(
        method,
        shape.update_rate,
        shape.event_rate,
        n,
        int(len(ids)),
        missing,
        duplicates,
        wrong,
        correct,
        p50,
        p99,
        mx,
        p99_all,
        growth,
        rate,
        sustained,
        "; ".join(reasons) or "ok",
        aborted,
    )
