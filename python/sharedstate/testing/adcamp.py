"""AdCamp input (Nova section 3.5) with realistic disorder, and the offline oracle it is checked
against. The demo, the tests and the benchmarks share it.

Updates: "ad belongs to campaign c from time t". Events: "user viewed ad at time t" (and clicked or
not). Both arrive out of order; a few updates arrive far behind (late if U has passed them).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

try:
    import numpy as np
    import pandas as pd
except ImportError as e:  # the core package does not need pandas; this module does
    raise ImportError("sharedstate.testing needs pandas and pyarrow: pip install 'sharedstate[pandas]'") from e

SECOND = 1_000_000  # microseconds


@dataclass
class Workload:
    update_batches: list[pd.DataFrame]  # ad_id, ts, campaign, in arrival order, one per micro-batch
    event_batches: list[pd.DataFrame]  # event_id, ad_id, ts
    lateness_us: int

    @property
    def updates(self) -> pd.DataFrame:
        return pd.concat(self.update_batches, ignore_index=True)

    @property
    def events(self) -> pd.DataFrame:
        return pd.concat(self.event_batches, ignore_index=True)


def _to_ts(micros: np.ndarray) -> pd.Series:
    return pd.to_datetime(pd.Series(micros, dtype="int64"), unit="us", utc=True)


def make_workload(
    seed: int,
    keys: int = 20,
    changes_per_key: int = 6,
    events: int = 600,
    horizon_s: int = 600,
    window_s: int = 60,
    lateness_s: int = 20,
    late_fraction: float = 0.05,
) -> Workload:
    """Updates and events arriving out of order within `lateness_s`, a few updates far behind
    (those that arrive below U are late), and events that arrive before the updates covering them.
    Ends with an update on a key no event uses, past every event, so U passes all events."""
    rng = np.random.default_rng(seed)
    horizon = horizon_s * SECOND
    rows = []
    for k in range(keys):
        times = np.sort(rng.choice(horizon, size=changes_per_key, replace=False))
        for t in times:
            rows.append((f"ad{k:03d}", int(t), f"camp{rng.integers(0, 8)}"))
    upd = pd.DataFrame(rows, columns=["ad_id", "ts_us", "campaign"])
    delay = rng.integers(0, lateness_s * SECOND, size=len(upd))
    far = rng.random(len(upd)) < late_fraction
    delay[far] += rng.integers(2 * lateness_s * SECOND, 4 * lateness_s * SECOND, size=int(far.sum()))
    upd["arrival"] = upd["ts_us"] + delay
    end = pd.DataFrame(
        [("__end__", horizon + 2 * (lateness_s + window_s) * SECOND, "end")], columns=["ad_id", "ts_us", "campaign"]
    )
    end["arrival"] = end["ts_us"]
    upd = pd.concat([upd, end], ignore_index=True)

    ev = pd.DataFrame(
        {
            "event_id": np.arange(events, dtype="int64"),
            "user_id": [f"user{u:05d}" for u in rng.integers(0, max(1, events // 4), size=events)],
            # a few ids that no update ever covers: left joins give them nulls
            "ad_id": [f"ad{k:03d}" for k in rng.integers(0, keys + 3, size=events)],
            "ts_us": rng.integers(0, horizon, size=events),
            "clicked": rng.random(events) < 0.08,
        }
    )
    # Events arrive early: most before the updates that cover them have been committed.
    ev["arrival"] = ev["ts_us"] + rng.integers(0, lateness_s * SECOND, size=events)

    def batches(df: pd.DataFrame, cols: list[str]) -> list[pd.DataFrame]:
        window = df["arrival"] // (window_s * SECOND)
        out = []
        for _, part in df.assign(w=window).sort_values(["w", "arrival"]).groupby("w", sort=True):
            part = part.sample(frac=1.0, random_state=int(rng.integers(1 << 31)))  # disorder inside a batch
            frame = part[cols].copy()
            frame["ts"] = _to_ts(part["ts_us"].to_numpy()).set_axis(part.index)
            out.append(frame[[c if c != "ts_us" else "ts" for c in cols]].reset_index(drop=True))
        return out

    return Workload(
        batches(upd, ["ad_id", "ts_us", "campaign"]),
        batches(ev, ["event_id", "user_id", "ad_id", "ts_us", "clicked"]),
        lateness_s * SECOND,
    )


def expected_late(work: Workload) -> pd.DataFrame:
    """Updates the State must reject: U before a batch is (max time of earlier batches) - lateness."""
    late = []
    u = None
    for batch in work.update_batches:
        ts = batch["ts"].astype("datetime64[us, UTC]").astype("int64")
        if u is not None:
            late.append(batch[ts < u])
        batch_max = int(ts.max())
        u = batch_max - work.lateness_us if u is None else max(u, batch_max - work.lateness_us)
    return pd.concat(late, ignore_index=True) if late else work.update_batches[0].iloc[0:0]


def accepted_updates(work: Workload) -> pd.DataFrame:
    """The update history the State must hold: every update but the late ones."""
    late = expected_late(work)[["ad_id", "ts"]]
    marked = work.updates.merge(late, how="left", on=["ad_id", "ts"], indicator=True)
    return marked[marked["_merge"] == "left_only"].drop(columns="_merge").reset_index(drop=True)


def oracle(
    events: pd.DataFrame, updates: pd.DataFrame, value: str = "campaign", time_column: str = "campaigns_time"
) -> pd.DataFrame:
    """The offline as-of join over the whole (accepted) update history."""
    upd = updates.rename(columns={"ts": time_column}).copy()
    upd["ts"] = upd[time_column]
    ev = events.sort_values("ts").reset_index(drop=True)
    joined = pd.merge_asof(
        ev,
        upd.sort_values("ts")[["ad_id", "ts", value, time_column]],
        on="ts",
        by="ad_id",
        direction="backward",
        allow_exact_matches=True,
    )
    return joined


def utc(series) -> pd.Series:
    """Times as UTC microseconds, the precision of a Spark TIMESTAMP."""
    return pd.to_datetime(series, utc=True).astype("datetime64[us, UTC]")


def comparable(joined: pd.DataFrame, time_column: str = "value_time") -> pd.DataFrame:
    """Fetch-join output or `oracle`'s answer in a form that compares equal when the rows do: the
    event, its campaign (None when missing) and the time of the update used, by event_id."""
    out = joined[["event_id", "ad_id", "ts", "campaign", time_column]].copy()
    for c in ("ts", time_column):
        out[c] = utc(out[c])
    out["campaign"] = out["campaign"].astype(object).where(out["campaign"].notna(), None)
    return out.sort_values("event_id").reset_index(drop=True)


UPDATE_SCHEMA = "ad_id STRING, ts TIMESTAMP, campaign STRING"
EVENT_SCHEMA = "event_id BIGINT, user_id STRING, ad_id STRING, ts TIMESTAMP, clicked BOOLEAN"


def to_spark_parquet(frame: pd.DataFrame, path: Path) -> None:
    """Parquet that Spark reads as TIMESTAMP: microsecond precision (pandas defaults to nanoseconds)."""
    out = frame.copy()
    for column in out.columns:
        if pd.api.types.is_datetime64_any_dtype(out[column]):
            if out[column].dt.tz is None:
                out[column] = out[column].dt.tz_localize("UTC")
            out[column] = out[column].astype("datetime64[us, UTC]")
    tmp = path.with_name("." + path.name + ".tmp")  # file streams skip dot-files: no half-written reads
    out.to_parquet(tmp, index=False)
    os.replace(tmp, path)


def write_batches(
    directory: Path,
    frames: list[pd.DataFrame],
    start_mtime: float | None = None,
    pause_s: float = 0.0,
    first_index: int = 0,
) -> None:
    """One parquet file per frame; modification times fix the order a file stream reads them.
    With `pause_s`, files appear one by one, as a live source would deliver them. `first_index`
    numbers the files on from an earlier call (part-<first_index>, ...)."""
    directory.mkdir(parents=True, exist_ok=True)
    base = start_mtime if start_mtime is not None else time.time() - 10_000
    for i, frame in enumerate(frames, start=first_index):
        path = directory / f"part-{i:05d}.parquet"
        to_spark_parquet(frame, path)
        os.utime(path, (base + i, base + i))
        if pause_s:
            time.sleep(pause_s)
