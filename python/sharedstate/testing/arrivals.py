"""What the partial-State workloads (fraud, learning, cf) share: times in microseconds from a fixed
epoch, and streams cut into batches by arrival time, shuffled within each batch (out of order)."""

from __future__ import annotations

import numpy as np
import pandas as pd

SECOND = 1_000_000
EPOCH = pd.Timestamp("2026-01-01", tz="UTC")


def timestamps(micros) -> pd.Series:
    """Microseconds after EPOCH as UTC timestamps."""
    return pd.Series(EPOCH + pd.to_timedelta(np.asarray(micros), unit="us"))


def arrival_batches(
    df: pd.DataFrame,
    cols: list[str],
    rng: np.random.Generator,
    ts_at: int,
    window_s: float = 60,
    aligned: bool = False,
) -> list[pd.DataFrame]:
    """`df` (with `ts_us` and `arrival` in microseconds) cut into batches of `window_s` seconds of
    arrival, each shuffled: the columns `cols` with `ts` (a timestamp of `ts_us`) inserted at `ts_at`.
    With `aligned`, batch i is the i-th window from time 0 (empty when nothing arrived in it), so two
    streams cut alike line up batch by batch."""
    window = df["arrival"] // round(window_s * SECOND)
    parts = dict(iter(df.assign(w=window).groupby("w", sort=True)))
    out = []
    for w in range(int(window.max()) + 1) if aligned else parts:
        part = parts.get(w, df.iloc[:0])
        part = part.sample(frac=1.0, random_state=int(rng.integers(1 << 31)))
        frame = part[cols].reset_index(drop=True)
        frame.insert(ts_at, "ts", timestamps(part["ts_us"].to_numpy()))
        out.append(frame)
    return out
