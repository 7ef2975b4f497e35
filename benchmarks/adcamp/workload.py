"""The AdCamp input of one benchmark point, generated deterministically and staged as files.

Time is cut into slots of `slot_s` seconds. Slot i holds the updates and views that "arrive" during
it; the feeder drops its two files into the live source directories at the end of the slot, so the
synthetic event-time clock (BASE + i * slot_s) runs at wall-clock speed and an event's latency is
measured from the moment its file became visible to Spark.

Updates ("ad belongs to campaign c from time t") come in rounds: each round re-assigns every ad once,
in a random order, at `update_rate`/s, so no ad goes longer than two rounds plus the lateness without
an update; that bound is what the range-join peers need (`range_s`). Update times lag their arrival
by up to `lateness_s` (out of order, never late), and no ad has two updates at one time: the peers'
data carries no arrival order to break such a tie, so the as-of answer would be ambiguous. Views
pick an ad uniformly, a few of them ads that no update covers (left joins give nulls), with times
up to `event_jitter_s` behind their arrival.
Both streams go on for `tail_s` seconds after the measured slots (streams do not end): the tail's
views push the view watermark of peer (a) past the measured ones and keep triggering the
foreachBatch peers; only views of the measured slots are checked and timed.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from sharedstate.testing.adcamp import SECOND, Workload

BASE_US = 1_767_225_600 * SECOND  # 2026-01-01 00:00:00 UTC
GENERATOR = "g3"  # in every staged directory's name: a change to the generator must not reuse old files
UPDATE_SCHEMA = "ad_id BIGINT, ts TIMESTAMP, campaign INT"
EVENT_SCHEMA = "event_id BIGINT, ad_id BIGINT, ts TIMESTAMP, clicked BOOLEAN"
CAMPAIGNS = 50
UNCOVERED_FRACTION = 0.02


@dataclass(frozen=True)
class Shape:
    """Everything that fixes one point's data (and so its directory in the cache)."""

    update_rate: int
    event_rate: int
    seconds: float  # measured span of views
    tail_s: float = 8.0
    slot_s: float = 0.25
    lateness_s: float = 1.0
    event_jitter_s: float = 0.5
    round_s: float = 1.0  # one update per ad per round: keys = update_rate * round_s
    seed: int = 7

    @property
    def keys(self) -> int:
        return max(10, int(self.update_rate * self.round_s))

    @property
    def measured_slots(self) -> int:
        return int(round(self.seconds / self.slot_s))

    @property
    def slots(self) -> int:
        return self.measured_slots + int(round(self.tail_s / self.slot_s))

    @property
    def range_s(self) -> float:
        """The as-of match is never older than this: two rounds plus the lateness, plus a second."""
        return 2 * self.round_s + self.lateness_s + 1.0

    @property
    def tag(self) -> str:
        return (
            f"u{self.update_rate}_e{self.event_rate}_s{self.seconds:g}_t{self.tail_s:g}_d{self.slot_s:g}"
            f"_l{self.lateness_s:g}_j{self.event_jitter_s:g}_r{self.round_s:g}_seed{self.seed}_{GENERATOR}"
        )


@dataclass
class Staged:
    """A point's files on disk and what the oracle needs about them."""

    shape: Shape
    directory: Path
    update_files: list[Path]  # one per slot
    event_files: list[Path]  # one per slot
    event_slot_starts: np.ndarray  # first event_id of each slot, plus the total at the end

    @property
    def measured_events(self) -> int:
        """Views of the measured slots: event ids below this are checked and timed."""
        return int(self.event_slot_starts[self.shape.measured_slots])


def _updates(shape: Shape) -> dict[str, np.ndarray]:
    rng = np.random.default_rng([shape.seed, 1, shape.update_rate])
    total = int(round(shape.update_rate * shape.slots * shape.slot_s))
    keys = shape.keys
    rounds = -(-total // keys)
    ad = np.concatenate([rng.permutation(keys) for _ in range(rounds)])[:total].astype(np.int64)
    arrival = (np.arange(total, dtype=np.int64) * SECOND) // shape.update_rate
    delay = rng.integers(0, int(shape.lateness_s * SECOND), size=total)
    return {
        "ad_id": ad,
        "ts": _without_ties(ad, BASE_US + arrival - delay),
        "campaign": rng.integers(0, CAMPAIGNS, size=total).astype(np.int32),
        "arrival": arrival,
    }


def _without_ties(ad: np.ndarray, ts: np.ndarray) -> np.ndarray:
    """`ts` with the later arrival of two updates of one ad at one time moved 1 us earlier (until no
    such pair is left): its delay grows by 1 us, at most to the lateness, so it is still not late."""
    ts = ts.copy()
    while True:
        order = np.lexsort((ts, ad))
        tied = (ad[order][1:] == ad[order][:-1]) & (ts[order][1:] == ts[order][:-1])
        if not tied.any():
            return ts
        ts[np.maximum(order[1:][tied], order[:-1][tied])] -= 1  # arrival order is index order


def _event_slot_starts(shape: Shape) -> np.ndarray:
    """The first event id of each slot, plus the total at the end: view i arrives at
    (i * SECOND) // event_rate, so the first id at or after edge E is ceil(E * event_rate / SECOND)."""
    return -(-(_slot_edges(shape) * shape.event_rate) // SECOND)


def _events(shape: Shape, slot: int, first: int, until: int) -> dict[str, np.ndarray]:
    """Slot `slot`'s views (ids first until `until`), from a generator of the slot's own: a point of
    hundreds of millions of views is made one slot at a time, never whole in memory."""
    rng = np.random.default_rng([shape.seed, 2, shape.update_rate, shape.event_rate, slot])
    n = until - first
    event_id = np.arange(first, until, dtype=np.int64)
    arrival = (event_id * SECOND) // shape.event_rate
    jitter = rng.integers(0, int(shape.event_jitter_s * SECOND), size=n)
    ad_space = int(shape.keys * (1 + UNCOVERED_FRACTION)) + 1
    return {
        "event_id": event_id,
        "ad_id": rng.integers(0, ad_space, size=n),
        "ts": BASE_US + arrival - jitter,
        "clicked": rng.random(n) < 0.08,
    }


def _table(columns: dict[str, np.ndarray], names: list[str], rows: slice) -> pa.Table:
    arrays = []
    for name in names:
        values = columns[name][rows]
        arrays.append(pa.array(values, type=pa.timestamp("us", tz="UTC")) if name == "ts" else pa.array(values))
    return pa.table(arrays, names=names)


def _slot_edges(shape: Shape) -> np.ndarray:
    """Each slot's start in microseconds of arrival, plus the end of the last."""
    return np.arange(shape.slots + 1, dtype=np.int64) * int(shape.slot_s * SECOND)


def _slot_bounds(arrival: np.ndarray, shape: Shape) -> np.ndarray:
    return np.searchsorted(arrival, _slot_edges(shape), side="left")


def stage(shape: Shape, cache: Path) -> Staged:
    """Writes (once; later calls reuse the cache) one update file and one event file per slot."""
    directory = cache / shape.tag
    upd_dir, ev_dir = directory / "updates", directory / "events"
    bounds_file = directory / "event_slot_starts.npy"
    upd_files = [upd_dir / f"slot-{i:05d}.parquet" for i in range(shape.slots)]
    ev_files = [ev_dir / f"slot-{i:05d}.parquet" for i in range(shape.slots)]
    if not bounds_file.exists():
        upd_dir.mkdir(parents=True, exist_ok=True)
        ev_dir.mkdir(parents=True, exist_ok=True)
        upd = _updates(shape)
        ub, eb = _slot_bounds(upd["arrival"], shape), _event_slot_starts(shape)
        for i in range(shape.slots):
            pq.write_table(_table(upd, ["ad_id", "ts", "campaign"], slice(ub[i], ub[i + 1])), upd_files[i])
            ev = _events(shape, i, int(eb[i]), int(eb[i + 1]))
            pq.write_table(_table(ev, ["event_id", "ad_id", "ts", "clicked"], slice(None)), ev_files[i])
        np.save(bounds_file.with_suffix(".tmp.npy"), eb)
        os.replace(bounds_file.with_suffix(".tmp.npy"), bounds_file)
    return Staged(shape, directory, upd_files, ev_files, np.load(bounds_file))


def as_workload(staged: Staged, events: bool = True) -> Workload:
    """The staged files as the demo's Workload (one batch per file), for its oracle helpers; with
    `events` False its updates only (the harness's oracle reads the views file by file)."""

    def frames(files: list[Path]):
        return [pq.read_table(f).to_pandas() for f in files]

    views = [f for f in frames(staged.event_files[: staged.shape.measured_slots]) if len(f)] if events else []
    return Workload(frames(staged.update_files), views, int(staged.shape.lateness_s * SECOND))
