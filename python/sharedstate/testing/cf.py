"""The online collaborative filtering of SDG (Algorithm 1) at a small scale: ratings update a
partitioned user-item table and a partial co-occurrence matrix; a recommendation for a user at time
t is the sum of the co-occurrence rows of the user's items, all as of t. The oracle replays the
ratings sequentially."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from sharedstate.testing.arrivals import EPOCH, SECOND, arrival_batches

ITEMS = 8
RATING_SCHEMA = "user STRING, item BIGINT, ts TIMESTAMP"


@dataclass
class Ratings:
    batches: list[pd.DataFrame]
    requests: pd.DataFrame  # req_id, user, ts: recommendations asked for, all below `horizon`
    lateness_s: int

    @property
    def ratings(self) -> pd.DataFrame:
        return pd.concat(self.batches, ignore_index=True)


def make_ratings(
    seed: int, users: int = 10, ratings: int = 150, requests: int = 40, horizon_s: int = 600, lateness_s: int = 20
) -> Ratings:
    """Ratings out of order within `lateness_s`; two closing ratings (user "__end__") past every
    request move the user-item table's U and then the co-occurrence matrix's past the requests."""
    rng = np.random.default_rng(seed)
    horizon = horizon_s * SECOND
    ra = pd.DataFrame(
        {
            "user": [f"u{u}" for u in rng.integers(0, users, size=ratings)],
            "item": rng.integers(0, ITEMS, size=ratings).astype("int64"),
            "ts_us": rng.choice(horizon, size=ratings, replace=False),
        }
    )
    ra["arrival"] = ra["ts_us"] + rng.integers(0, lateness_s * SECOND, size=ratings)
    end = pd.DataFrame(
        {
            "user": ["__end__"] * 2,
            "item": [0, 0],
            "ts_us": [horizon + 3 * lateness_s * SECOND, horizon + 6 * lateness_s * SECOND],
        }
    )
    end["arrival"] = end["ts_us"]
    ra = pd.concat([ra, end], ignore_index=True)
    out = arrival_batches(ra, ["user", "item"], rng, ts_at=2)
    req = pd.DataFrame(
        {
            "req_id": np.arange(requests, dtype="int64"),
            "user": [f"u{u}" for u in rng.integers(0, users + 1, size=requests)],  # u<users>: never rated
            "ts": EPOCH + pd.to_timedelta(rng.integers(0, horizon, size=requests), unit="us"),
        }
    )
    return Ratings(out, req, lateness_s)


def recommendations_oracle(work: Ratings) -> dict[int, list[int] | None]:
    """Per request: the sum of the co-occurrence rows of the user's items as of its time (SDG's
    getRec with binary ratings); None for a user with no rating yet."""
    ratings = work.ratings.sort_values("ts")
    times = ratings["ts"].to_list()
    history = []  # (time, user items, matrix) after each rating
    items: dict[str, set[int]] = {}
    c = np.zeros((ITEMS, ITEMS), dtype="int64")
    for r, t in zip(ratings.itertuples(), times):
        mine = items.setdefault(r.user, set())
        mine.add(int(r.item))
        for j in sorted(mine):
            c[r.item, j] += 1
            if j != r.item:
                c[j, r.item] += 1
        history.append((t, {u: set(s) for u, s in items.items()}, c.copy()))
    out: dict[int, list[int] | None] = {}
    for q in work.requests.itertuples():
        i = int(np.searchsorted(np.array(times, dtype=object), q.ts, side="right")) if times else 0
        if i == 0 or q.user not in history[i - 1][1]:
            out[int(q.req_id)] = None
            continue
        _, users, m = history[i - 1]
        out[int(q.req_id)] = [int(x) for x in m[sorted(users[q.user])].sum(axis=0)]
    return out
