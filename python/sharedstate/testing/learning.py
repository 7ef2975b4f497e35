"""The online-learning workload of the partial-State tests (docs/partial-state.md): a stream of
labelled examples that trains a linear model by SGD steps, each partition adding its steps to its
own instance of a partial ``sum`` State, and a stream of events scored with the merged model as of
each event's time. Both arrive out of order; the oracle replays the steps sequentially.

A step of example (x, y) adds ``LR * y * x`` to the weights: the gradient step of the linear loss
``-y * w.x``. Its features are small integers and LR a power of two, so every sum of steps is
exact in floating point whatever the order or grouping: a merged model equals the oracle exactly,
for any number of partitions."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sharedstate.testing.arrivals import SECOND, arrival_batches

LR = 0.125
DIM = 4

EXAMPLE_SCHEMA = "ex_id BIGINT, model STRING, ts TIMESTAMP, x ARRAY<DOUBLE>, y DOUBLE"
EVENT_SCHEMA = "ev_id BIGINT, model STRING, ts TIMESTAMP, x ARRAY<DOUBLE>"


@dataclass
class Learning:
    example_batches: list[pd.DataFrame]
    event_batches: list[pd.DataFrame]
    lateness_s: int

    @property
    def examples(self) -> pd.DataFrame:
        return pd.concat(self.example_batches, ignore_index=True)

    @property
    def events(self) -> pd.DataFrame:
        return pd.concat(self.event_batches, ignore_index=True)


def make_learning(
    seed: int, models: int = 2, examples: int = 240, events: int = 200, horizon_s: int = 600, lateness_s: int = 20
) -> Learning:
    """Examples and events out of order within `lateness_s` (none late for a writer with that
    lateness), in batches of about 60 s of arrival. Ends with a zero step per model past every
    event, so the State's U passes all events."""
    rng = np.random.default_rng(seed)
    horizon = horizon_s * SECOND
    ex = pd.DataFrame(
        {
            "ex_id": np.arange(examples, dtype="int64"),
            "model": [f"m{k}" for k in rng.integers(0, models, size=examples)],
            "ts_us": rng.choice(horizon, size=examples, replace=False),
            "x": [rng.integers(-3, 4, size=DIM).astype(float).tolist() for _ in range(examples)],
            "y": rng.choice([-1.0, 1.0], size=examples),
        }
    )
    ex["arrival"] = ex["ts_us"] + rng.integers(0, lateness_s * SECOND, size=examples)
    end_at = horizon + 4 * lateness_s * SECOND
    end = pd.DataFrame(
        {
            "ex_id": np.arange(examples, examples + models, dtype="int64"),
            "model": [f"m{k}" for k in range(models)],
            "ts_us": [end_at] * models,
            "x": [[0.0] * DIM] * models,
            "y": [1.0] * models,
        }
    )
    end["arrival"] = end_at
    ex = pd.concat([ex, end], ignore_index=True)
    ev = pd.DataFrame(
        {
            "ev_id": np.arange(events, dtype="int64"),
            "model": [f"m{k}" for k in rng.integers(0, models, size=events)],
            "ts_us": rng.integers(0, horizon, size=events),
            "x": [rng.integers(-3, 4, size=DIM).astype(float).tolist() for _ in range(events)],
        }
    )
    ev["arrival"] = ev["ts_us"] + rng.integers(0, lateness_s * SECOND, size=events)
    return Learning(
        arrival_batches(ex, ["ex_id", "model", "x", "y"], rng, ts_at=2),
        arrival_batches(ev, ["ev_id", "model", "x"], rng, ts_at=2),
        lateness_s,
    )


class ModelOracle:
    """The weights of each model as of any time: the sequential sum of every step at or before it."""

    def __init__(self, examples: pd.DataFrame):
        self._times: dict[str, np.ndarray] = {}
        self._sums: dict[str, np.ndarray] = {}
        for model, part in examples.sort_values("ts").groupby("model"):
            steps = np.array([LR * y * np.array(x) for x, y in zip(part["x"], part["y"])])
            self._times[model] = part["ts"].dt.tz_convert(None).to_numpy()
            self._sums[model] = np.cumsum(steps, axis=0)

    def step_times(self, model: str) -> np.ndarray:
        return self._times.get(model, np.array([], dtype="datetime64[ns]"))

    def weights(self, model: str, t) -> list[float] | None:
        """The model as of `t`; None before its first step."""
        times = self._times.get(model)
        if times is None:
            return None
        i = np.searchsorted(times, np.datetime64(pd.Timestamp(t).tz_convert(None)), side="right")
        return None if i == 0 else self._sums[model][i - 1].tolist()
