"""The benchmark's inputs: the partial-State applications' generated workloads (sharedstate.testing)
at a benchmark size, staged once as parquet files per stream, and their oracles.

Each workload is cut into files by 60 s of arrival (out of order within a file); a point makes the
files visible one by one (the feeder), and a side is checked against the oracle of its workload."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from sharedstate.demos.fraud import comparable
from sharedstate.testing.adcamp import write_batches
from sharedstate.testing.fraud import RULE_SCHEMA, TX_SCHEMA, Fraud, fraud_oracle, make_fraud
from sharedstate.testing.learning import EVENT_SCHEMA, EXAMPLE_SCHEMA, Learning, ModelOracle, make_learning


@dataclass(frozen=True)
class Sizes:
    fraud_transactions: int
    fraud_rules: int
    learning_examples: int
    learning_events: int


FULL = Sizes(fraud_transactions=16_000, fraud_rules=3, learning_examples=6_000, learning_events=1_500)
QUICK = Sizes(fraud_transactions=600, fraud_rules=3, learning_examples=300, learning_events=120)


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

    @property
    def events(self) -> int:
        return sum(len(ids) for ids in self.measured_ids)


def _write(directory: Path, frames: list[pd.DataFrame]) -> list[Path]:
    if not directory.exists():
        write_batches(directory, frames)
    return sorted(directory.glob("part-*.parquet"))


def stage_fraud(cache: Path, sizes: Sizes, seed: int) -> Staged:
    work = make_fraud(seed, transactions=sizes.fraud_transactions, rules=sizes.fraud_rules)
    d = cache / f"fraud-{sizes.fraud_transactions}-{seed}"
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


def fraud_expected(work: Fraud) -> pd.DataFrame:
    return comparable(fraud_oracle(work))


def learning_expected(work: Learning) -> dict[int, list[float] | None]:
    oracle = ModelOracle(work.examples)
    return {int(e.ev_id): oracle.weights(e.model, e.ts) for e in work.events.itertuples()}


def learning_weights(frame: pd.DataFrame) -> dict[int, list[float] | None]:
    return {int(i): (None if w is None else [float(x) for x in w]) for i, w in zip(frame["ev_id"], frame["w"])}
