"""Helpers that feed files to streaming queries in a fixed order, one file per micro-batch."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pandas as pd


def write_batches(directory: Path, frames: list[pd.DataFrame], start_mtime: float | None = None) -> None:
    """Writes one parquet file per frame; modification times fix the order a file stream reads them."""
    directory.mkdir(parents=True, exist_ok=True)
    base = start_mtime if start_mtime is not None else time.time() - 10_000
    for i, frame in enumerate(frames):
        path = directory / f"part-{i:05d}.parquet"
        to_spark_parquet(frame, path)
        os.utime(path, (base + i, base + i))


def to_spark_parquet(frame: pd.DataFrame, path: Path) -> None:
    """Parquet that Spark reads as TIMESTAMP: microsecond precision (pandas defaults to nanoseconds)."""
    out = frame.copy()
    for column in out.columns:
        if pd.api.types.is_datetime64_any_dtype(out[column]):
            if out[column].dt.tz is None:
                out[column] = out[column].dt.tz_localize("UTC")
            out[column] = out[column].astype("datetime64[us, UTC]")
    out.to_parquet(path, index=False)


def wait_until(predicate, timeout: float, interval: float = 0.5, what: str = "condition") -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def utc_micros(series: pd.Series) -> pd.Series:
    """Timestamps as integer microseconds since the epoch (UTC)."""
    return series.dt.tz_convert("UTC").astype("datetime64[us, UTC]").astype("int64") if series.dt.tz is not None \
        else series.astype("datetime64[us]").astype("int64")
