"""The benchmark's inputs: the partial-State applications' generated workloads (sharedstate.testing)
at a benchmark size, staged once as parquet files per stream, and their oracles: fraud detection,
the value barrier (DGS: barriers over a value stream), online learning and collaborative filtering.

Each workload is cut into files by 60 s of arrival (out of order within a file); a point makes the
files visible one by one (the feeder), and a side is checked against the oracle of its workload.
A sustained-rate point (`stage_rate`) sizes fraud's or the value barrier's workload to its rate:
`rate * feed_s` transactions, the streams cut alike into files of `pace_s` seconds of feed."""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd

from sharedstate.demos.fraud import comparable
from sharedstate.testing.adcamp import write_batches
from sharedstate.testing.arrivals import EPOCH, SECOND, arrival_batches
from sharedstate.testing.cf import RATING_SCHEMA, Ratings, make_ratings, recommendations_oracle
from sharedstate.testing.fraud import RULE_SCHEMA, TX_SCHEMA, Fraud, fraud_oracle, make_fraud
from sharedstate.testing.learning import EVENT_SCHEMA, EXAMPLE_SCHEMA, Learning, ModelOracle, make_learning


@dataclass(frozen=True)
class Sizes:
    fraud_transactions: int
    fraud_rules: int
    learning_examples: int
    learning_events: int
    barrier_values: int
    barriers: int
    cf_ratings: int
    cf_users: int
    cf_requests: int


FULL = Sizes(
    fraud_transactions=16_000,
    fraud_rules=3,
    learning_examples=6_000,
    learning_events=1_500,
    barrier_values=16_000,
    barriers=40,
    cf_ratings=3_000,
    cf_users=150,
    cf_requests=1_000,
)
# issue 25's fraud size (about 10K transactions between two rules): each micro-batch (60 s of
# arrival) holds about 5,800 transactions, amortising Spark's per-batch work over 4x more events
LARGE = Sizes(
    fraud_transactions=70_000,
    fraud_rules=6,
    learning_examples=6_000,
    learning_events=1_500,
    barrier_values=70_000,
    barriers=40,
    cf_ratings=3_000,
    cf_users=150,
    cf_requests=1_000,
)
QUICK = Sizes(
    fraud_transactions=600,
    fraud_rules=3,
    learning_examples=300,
    learning_events=120,
    barrier_values=600,
    barriers=6,
    cf_ratings=150,
    cf_users=10,
    cf_requests=40,
)

REQUEST_SCHEMA = "req_id BIGINT, user STRING, ts TIMESTAMP"


@dataclass
class Staged:
    """An application's workload as files: `streams` maps a stream name to (schema, its files in
    order); the events of `measured` are timed and checked, file by file (`measured_ids`)."""

    app: str
    work: Fraud | Learning
    streams: dict[str, tuple[str, list[Path]]]
    measured: str
    measured_ids: list[list[int]]  # per file of the measured stream: the ids checked
    id_column: str
    # events an output id stands for (the value barrier: the values in its window); 1 when absent
    weights: dict[int, int] | None = None

    @property
    def events(self) -> int:
        return sum(len(ids) for ids in self.measured_ids)


def _write(directory: Path, frames: list[pd.DataFrame]) -> list[Path]:
    if not directory.exists():
        write_batches(directory, frames)
    return sorted(directory.glob("part-*.parquet"))


def stage_fraud(cache: Path, sizes: Sizes, seed: int) -> Staged:
    work = make_fraud(seed, transactions=sizes.fraud_transactions, rules=sizes.fraud_rules)
    return _fraud_staged(work, cache / f"fraud-{sizes.fraud_transactions}-{seed}")


def _fraud_staged(work: Fraud, d: Path) -> Staged:
    streams = {
        "tx": (TX_SCHEMA, _write(d / "tx", work.tx_batches)),
        "rules": (RULE_SCHEMA, _write(d / "rules", work.rule_batches)),
    }
    ids = [[int(i) for i in b["tx_id"] if i < work.real_tx] for b in work.tx_batches]
    return Staged("fraud", work, streams, "tx", ids, "tx_id")


def stage_learning(cache: Path, sizes: Sizes, seed: int) -> Staged:
    work = make_learning(seed, models=2, examples=sizes.learning_examples, events=sizes.learning_events)
    d = cache / f"learning-{sizes.learning_examples}-{seed}"
    streams = {
        "ex": (EXAMPLE_SCHEMA, _write(d / "ex", work.example_batches)),
        "ev": (EVENT_SCHEMA, _write(d / "ev", work.event_batches)),
    }
    ids = [[int(i) for i in b["ev_id"]] for b in work.event_batches]
    return Staged("learning", work, streams, "ev", ids, "ev_id")


def stage_barrier(cache: Path, sizes: Sizes, seed: int) -> Staged:
    """DGS's value barrier: the fraud workload's transactions are the values, its rules the barriers
    (many of them); each barrier's output is checked, and stands for the values since the barrier before."""
    work = make_fraud(seed, transactions=sizes.barrier_values, rules=sizes.barriers)
    return _barrier_staged(work, cache / f"barrier-{sizes.barrier_values}-{sizes.barriers}-{seed}")


def _barrier_staged(work: Fraud, d: Path) -> Staged:
    barriers = int(work.rules["rule_id"].max())  # the last one closes: past every value
    streams = {
        "tx": (TX_SCHEMA, _write(d / "tx", work.tx_batches)),
        "rules": (RULE_SCHEMA, _write(d / "rules", work.rule_batches)),
    }
    # the closing barrier (past every value, there to move U) is not checked: a watermark never passes it
    ids = [[int(i) for i in b["rule_id"] if i < barriers] for b in work.rule_batches]
    rules = work.rules.sort_values("ts")
    upto = np.searchsorted(np.sort(_naive(work.transactions["ts"])), _naive(rules["ts"]), side="right")
    weights = {int(r): int(n) for r, n in zip(rules["rule_id"], np.diff(upto, prepend=0)) if r < barriers}
    return Staged("barrier", work, streams, "rules", ids, "rule_id", weights)


# Sustained-rate workloads: rules (barriers) come at a cadence of event time whatever the rate, as a real
# rule stream would: fraud a rule every 10 s (60 per point; issue 25's 10,000 transactions between two
# rules at 30,000 transactions/s), the value barrier a barrier every second (600 per point: its output,
# one row per barrier, times the run).
RULES_PER_POINT = {"fraud": 60, "barrier": 600}
HORIZON_S = 600  # the generators' event-time span


def stage_rate(app: str, cache: Path, rate: float, feed_s: float, pace_s: float, seed: int) -> Staged:
    """Fraud's or the value barrier's workload for a sustained-rate point: `rate * feed_s`
    transactions whose event time spans HORIZON_S, so each file (`pace_s` of feed) holds the
    HORIZON_S / feed_s * pace_s seconds of event time that arrived in it; rules and transactions
    are cut alike (file i of both streams is the same window of arrival)."""
    n = max(1, round(rate * feed_s))
    window_s = pace_s * HORIZON_S / feed_s
    work = make_fraud(seed, transactions=n, rules=RULES_PER_POINT[app], window_s=window_s, aligned=True)
    d = cache / f"{app}-rate-{n}-{feed_s}-{pace_s}-{seed}"
    return _fraud_staged(work, d) if app == "fraud" else replace(_barrier_staged(work, d), app="barrier")


def _request_batches(work: Ratings, rng: np.random.Generator) -> list[pd.DataFrame]:
    """The recommendation requests as a stream: each arrives up to 5 s after its time."""
    req = work.requests.assign(ts_us=(work.requests["ts"] - EPOCH) // pd.Timedelta(microseconds=1))
    req["arrival"] = req["ts_us"] + rng.integers(0, 5 * SECOND, size=len(req))
    return arrival_batches(req, ["req_id", "user"], rng, ts_at=2)


def stage_cf(cache: Path, sizes: Sizes, seed: int) -> Staged:
    work = make_ratings(seed, users=sizes.cf_users, ratings=sizes.cf_ratings, requests=sizes.cf_requests)
    batches = _request_batches(work, np.random.default_rng(seed))
    d = cache / f"cf-{sizes.cf_ratings}-{sizes.cf_requests}-{seed}"
    streams = {
        "ratings": (RATING_SCHEMA, _write(d / "ratings", work.batches)),
        "requests": (REQUEST_SCHEMA, _write(d / "requests", batches)),
    }
    ids = [[int(i) for i in b["req_id"]] for b in batches]
    return Staged("cf", work, streams, "requests", ids, "req_id")


def barrier_expected(work: Fraud) -> dict[int, tuple[int | None, int | None]]:
    """Per barrier: the total and count of every value at or before it (None before the first value)."""
    tx = work.transactions.sort_values("ts")
    cum = np.cumsum(tx["amount"].to_numpy())
    upto = np.searchsorted(_naive(tx["ts"]), _naive(work.rules["ts"]), side="right")
    closing = work.rules["rule_id"].max()
    return {
        int(r): (int(cum[i - 1]), int(i)) if i else (None, None)
        for r, i in zip(work.rules["rule_id"], upto)
        if r != closing
    }


def _naive(ts: pd.Series) -> np.ndarray:
    return ts.dt.tz_convert(None).to_numpy()


def cf_expected(work: Ratings) -> dict[int, list[int] | None]:
    return recommendations_oracle(work)


def fraud_expected(work: Fraud) -> pd.DataFrame:
    """sharedstate.testing.fraud's oracle, vectorised (the same per transaction: the last rule at or
    before it, the total and count of every transaction at or before that rule, amount > factor *
    mean); `test_partial_bench.py` checks it equals `fraud_oracle` on random workloads."""
    tx = work.transactions
    by_time = tx.sort_values("ts", kind="stable")
    tx_t = _naive(by_time["ts"])
    cum = np.cumsum(by_time["amount"].to_numpy())
    rules = work.rules.sort_values("ts", kind="stable").reset_index(drop=True)
    upto = np.searchsorted(tx_t, _naive(rules["ts"]), side="right")  # per rule: transactions at or before it
    real = tx[tx["tx_id"] < work.real_tx].sort_values("tx_id").reset_index(drop=True)
    j = np.searchsorted(_naive(rules["ts"]), _naive(real["ts"]), side="right") - 1  # each one's last rule
    has = j >= 0
    jj = np.where(has, j, 0)
    n = np.where(has, upto[jj], 0)
    total = np.where(n > 0, cum[np.maximum(n, 1) - 1], 0)
    factor = rules["factor"].to_numpy()[jj]
    with np.errstate(divide="ignore", invalid="ignore"):
        flagged = real["amount"].to_numpy() > factor * total / n
    out = pd.DataFrame(
        {
            "tx_id": real["tx_id"],
            "rule_id": pd.array(np.where(has, rules["rule_id"].to_numpy()[jj], 0), dtype="Int64"),
            "total": pd.array(total, dtype="Int64"),
            "n": pd.array(n, dtype="Int64"),
            "flagged": pd.array(flagged, dtype="boolean"),
        }
    )
    out.loc[~has, "rule_id"] = pd.NA
    out.loc[n == 0, ["total", "n", "flagged"]] = pd.NA
    return comparable(out)


def fraud_expected_sequential(work: Fraud) -> pd.DataFrame:
    return comparable(fraud_oracle(work))


def learning_expected(work: Learning) -> dict[int, list[float] | None]:
    oracle = ModelOracle(work.examples)
    return {int(e.ev_id): oracle.weights(e.model, e.ts) for e in work.events.itertuples()}


def learning_weights(frame: pd.DataFrame) -> dict[int, list[float] | None]:
    return {int(i): (None if w is None else [float(x) for x in w]) for i, w in zip(frame["ev_id"], frame["w"])}
