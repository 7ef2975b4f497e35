"""Offline oracles shared by the local tests (python/tests) and the cluster tests (it/): range and
range-aggregate fetches, read-uncommitted answers with bounded staleness, the as-of join, and the
arithmetic of Spark's rate source in continuous mode. Each is computed from the input alone (plus,
where the input is a live source, the set of rows the source emitted), never from the plugin's
answers. Built on the AdCamp workload of sharedstate.testing.adcamp.
"""

from __future__ import annotations

import math

try:
    import pandas as pd
except ImportError as e:  # the core package does not need pandas; this module does
    raise ImportError("sharedstate.testing needs pandas and pyarrow: pip install 'sharedstate[pandas]'") from e

from sharedstate.testing.adcamp import accepted_updates, utc

NUMERIC_UPDATES = "ad_id STRING, ts TIMESTAMP, v BIGINT"


def numeric(frame: pd.DataFrame) -> pd.DataFrame:
    """AdCamp updates with a number instead of a campaign name ("camp5" -> 5, the end marker -> 0)."""
    out = frame.copy()
    out["v"] = out.pop("campaign").map(lambda c: int(c[4:]) if c.startswith("camp") else 0).astype("int64")
    return out


def range_expected(work, rule: str, window_s: int) -> pd.DataFrame:
    """event_id and the value a `rule` fetch over [ts - window, ts] gives on the accepted numeric
    AdCamp history: a list of (time, v) pairs for range, the sum (None when empty), the count, or
    the mean (None when empty) for avg."""
    history = numeric(accepted_updates(work))
    history["ts"] = utc(history["ts"])
    by_key = {k: g.sort_values("ts") for k, g in history.groupby("ad_id")}
    window = pd.Timedelta(seconds=window_s)
    rows = []
    for e in work.events.itertuples():
        t = pd.Timestamp(e.ts)
        g = by_key.get(e.ad_id)
        hit = g[(g["ts"] >= t - window) & (g["ts"] <= t)] if g is not None else None
        pairs = [] if hit is None else list(zip(hit["ts"], hit["v"]))
        vs = [v for _, v in pairs]
        value = {
            "range": pairs,
            "sum": sum(vs) if vs else None,
            "count": len(vs),
            "avg": sum(vs) / len(vs) if vs else None,
        }[rule]
        rows.append((e.event_id, value))
    out = pd.DataFrame({"event_id": [r[0] for r in rows], "value": pd.Series([r[1] for r in rows], dtype=object)})
    return out.sort_values("event_id").reset_index(drop=True)


def fetched_values(got: pd.DataFrame, state_name: str, rule: str) -> list:
    """The rule's answer column of fetch-join output as plain Python values, in row order."""
    if rule == "range":
        return list(
            got[f"{state_name}_range"].map(
                lambda pairs: [(pd.Timestamp(p[f"{state_name}_time"], tz="UTC"), p["v"]) for p in pairs]
            )
        )
    if rule == "count":
        return [int(x) for x in got[f"{state_name}_count"]]
    column = got[f"{rule}_v"]
    if rule == "avg":
        return [None if pd.isna(x) else float(x) for x in column]
    return [None if pd.isna(x) else int(x) for x in column]  # pandas turns ints with nulls into floats


def mismatches(event_ids, got: list, want: list) -> list:
    """(event_id, got, want) where they differ; floats (avg) compare to 1e-9 relative."""

    def same(a, b) -> bool:
        if isinstance(a, float) and isinstance(b, float):
            return math.isclose(a, b, rel_tol=1e-9)
        return a == b

    return [(i, a, b) for i, a, b in zip(event_ids, got, want) if not same(a, b)]


def asof_expected(events: pd.DataFrame, history: pd.DataFrame, key: str, value: str, time_column: str) -> pd.DataFrame:
    """The offline as-of join: per event (key, ts), the history row with the largest ts <= the
    event's; `value` becomes `want` and the history's ts `time_column` (nulls where none)."""
    hist = history[[key, "ts", value]].assign(ts=lambda d: utc(d["ts"])).sort_values("ts")
    hist[time_column] = hist["ts"]
    ev = events.assign(ts=lambda d: utc(d["ts"])).sort_values("ts")
    return pd.merge_asof(ev, hist.rename(columns={value: "want"}), on="ts", by=key, direction="backward")


def stale_answer_violations(
    answers: pd.DataFrame, history: pd.DataFrame, staleness: pd.Timedelta, key: str, value: str, time_column: str
) -> list:
    """Read-uncommitted answers that no bounded-staleness read could give.

    The engine applies an update only once U passes it, and a read-uncommitted fetch at t is
    answered once t - s < U from what is applied, so its answer is the as-of value at some
    t' in [t - s, t]: the newest pair at or before t, except that pairs after t - s may be
    missing. `answers` has key, ts, value and time_column (the timestamp of the pair used, null
    with none); returns (row, why) for each answer outside that set."""
    by_key = {k: g.sort_values("ts") for k, g in history.assign(ts=lambda d: utc(d["ts"])).groupby(key)}
    bad = []
    for row in answers.itertuples(index=False):
        r = row._asdict()
        t = pd.Timestamp(r["ts"]).tz_convert("UTC") if pd.Timestamp(r["ts"]).tzinfo else pd.Timestamp(r["ts"], tz="UTC")
        g = by_key.get(r[key])
        pairs = g[g["ts"] <= t] if g is not None else None
        used = r[time_column]
        if used is None or pd.isna(used):
            # no value: nothing at or before t - s may exist
            if pairs is not None and (pairs["ts"] <= t - staleness).any():
                bad.append((r, "null although a pair at or before t - staleness exists"))
            continue
        used = pd.Timestamp(used, tz="UTC") if pd.Timestamp(used).tzinfo is None else pd.Timestamp(used)
        hit = pairs[pairs["ts"] == used] if pairs is not None else None
        if hit is None or len(hit) == 0:
            bad.append((r, "the pair used is not in the history at or before t"))
        elif hit[value].iloc[-1] != r[value]:
            bad.append((r, f"value differs from the history's {hit[value].iloc[-1]!r} at that time"))
        elif ((pairs["ts"] > used) & (pairs["ts"] <= t - staleness)).any():
            bad.append((r, "a newer pair at or before t - staleness was skipped"))
    return bad


def rate_prefix_gaps(values: list[int], partitions: int) -> list[int]:
    """Partitions whose values are not a gap-free prefix of the rate source's sequence.

    In continuous mode partition p of P of Spark's rate source emits p, p + P, p + 2P, ... in order,
    so the values a query saw from each partition are such a prefix."""
    bad = []
    for p in range(partitions):
        mine = sorted(v for v in values if v % partitions == p)
        if mine != list(range(p, p + partitions * len(mine), partitions)):
            bad.append(p)
    return bad
