"""The fraud-detection workload of the DGS synchronisation pattern (docs/partial-state.md): a stream
of transactions and a stream of rules. Each transaction is checked against the last rule at or
before it and the aggregate of every transaction up to that rule (the rule is a barrier: it sees
every transaction before it and is seen by every transaction after it). Both arrive out of order;
the oracle computes the same sequentially."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sharedstate.testing.arrivals import SECOND, arrival_batches

TX_SCHEMA = "tx_id BIGINT, account STRING, ts TIMESTAMP, amount BIGINT"
RULE_SCHEMA = "rule_id BIGINT, ts TIMESTAMP, factor DOUBLE"


@dataclass
class Fraud:
    tx_batches: list[pd.DataFrame]
    rule_batches: list[pd.DataFrame]
    lateness_s: int
    real_tx: int  # transactions with tx_id < real_tx are checked; the last one only moves U

    @property
    def transactions(self) -> pd.DataFrame:
        return pd.concat(self.tx_batches, ignore_index=True)

    @property
    def rules(self) -> pd.DataFrame:
        return pd.concat(self.rule_batches, ignore_index=True)


def make_fraud(
    seed: int,
    transactions: int = 400,
    rules: int = 8,
    horizon_s: int = 600,
    lateness_s: int = 20,
    window_s: float = 60,
    aligned: bool = False,
) -> Fraud:
    """Transactions out of order within `lateness_s`; rules in time order, each a few seconds late.
    Ends with a rule past every transaction and a transaction past every rule, so each stream's U
    passes the other's times. Each stream is cut into batches of `window_s` seconds of arrival
    (`aligned`: batch i of both streams is the same window, empty when nothing arrived in it)."""
    rng = np.random.default_rng(seed)
    horizon = horizon_s * SECOND
    tx = pd.DataFrame(
        {
            "tx_id": np.arange(transactions, dtype="int64"),
            "account": [f"acct{a}" for a in rng.integers(0, 20, size=transactions)],
            "ts_us": rng.choice(horizon, size=transactions, replace=False),
            # mostly small amounts, a few large ones: the fraud the rules look for
            "amount": np.where(
                rng.random(transactions) < 0.1,
                rng.integers(200, 1000, size=transactions),
                rng.integers(1, 100, size=transactions),
            ).astype("int64"),
        }
    )
    tx["arrival"] = tx["ts_us"] + rng.integers(0, lateness_s * SECOND, size=transactions)
    end_at = horizon + 6 * lateness_s * SECOND
    end_tx = pd.DataFrame({"tx_id": [transactions], "account": ["__end__"], "ts_us": [end_at], "amount": [0]})
    end_tx["arrival"] = end_tx["ts_us"]
    tx = pd.concat([tx, end_tx], ignore_index=True)
    rule_times = np.sort(rng.choice(horizon, size=rules, replace=False))
    ru = pd.DataFrame(
        {
            "rule_id": np.arange(rules + 1, dtype="int64"),
            "ts_us": np.append(rule_times, horizon + 3 * lateness_s * SECOND),
            "factor": np.append(rng.choice([1.5, 2.0, 3.0, 5.0], size=rules), 1.0),
        }
    )
    ru["arrival"] = ru["ts_us"] + rng.integers(0, 5 * SECOND, size=len(ru))
    return Fraud(
        arrival_batches(tx, ["tx_id", "account", "amount"], rng, ts_at=2, window_s=window_s, aligned=aligned),
        arrival_batches(ru, ["rule_id", "factor"], rng, ts_at=1, window_s=window_s, aligned=aligned),
        lateness_s,
        transactions,
    )


def fraud_oracle(work: Fraud) -> pd.DataFrame:
    """Per checked transaction: the rule it is checked against, the total and count of every
    transaction at or before that rule, and whether it is flagged (amount > factor * mean)."""
    tx = work.transactions
    rules = work.rules.sort_values("ts").reset_index(drop=True)
    times = tx.sort_values("ts")
    tx_t = times["ts"].dt.tz_convert(None).to_numpy()
    cum_amount = np.cumsum(times["amount"].to_numpy())
    rows = []
    for r in tx[tx["tx_id"] < work.real_tx].itertuples():
        before = rules[rules["ts"] <= r.ts]
        if before.empty:
            rows.append((r.tx_id, None, None, None, None))
            continue
        rule = before.iloc[-1]
        i = np.searchsorted(tx_t, np.datetime64(rule["ts"].tz_convert(None)), side="right")
        total = int(cum_amount[i - 1]) if i else None
        n = int(i) if i else None
        flagged = None if not n else bool(r.amount > rule["factor"] * total / n)
        rows.append((r.tx_id, int(rule["rule_id"]), total, n, flagged))
    return pd.DataFrame(rows, columns=["tx_id", "rule_id", "total", "n", "flagged"]).sort_values("tx_id")
