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
    df: pd.DataFrame, cols: list[str], rng: np.random.Generator, ts_at: int, window_s: int = 60
) -> list[pd.DataFrame]:
    """`df` (with `ts_us` and `arrival` in microseconds) cut into batches of `window_s` seconds of
    arrival, each shuffled: the columns `cols` with `ts` (a timestamp of `ts_us`) inserted at `ts_at`."""
    out = []
    for _, part in df.assign(w=df["arrival"] // (window_s * SECOND)).groupby("w", sort=True):
        part = part.sample(frac=1.0, random_state=int(rng.integers(1 << 31)))
        frame = part[cols].reset_index(drop=True)
        frame.insert(ts_at, "ts", timestamps(part["ts_us"].to_numpy()))
        out.append(frame)
    return out
