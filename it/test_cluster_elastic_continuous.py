"""A continuous-mode change stream across live partition moves on two real executor JVMs
(local-cluster[2,2,1024]), for an in-memory and a durable State: every partition is moved onto one
executor (the other executor's host reader then covers none and must follow its partitions where
they went) and spread again by State.rebalance, while a writer commits. The stream has every pair
below the final U exactly once: no duplicate, no gap.

The session runs in a subprocess (it/apps/elastic_continuous_app.py).
"""

from __future__ import annotations

import pandas as pd
import pytest

from cluster_apps import run_cluster_app
from sharedstate.testing.adcamp import accepted_updates, make_workload, utc

SEED = 2047


@pytest.fixture(scope="module", params=["memory", "durable"])
def continuous_run(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(f"elastic-continuous-{request.param}")
    return out, run_cluster_app("elastic_continuous_app.py", out, str(SEED), request.param)


@pytest.mark.slow
def test_partitions_moved_away_from_a_host_reader_and_back(continuous_run):
    _, r = continuous_run
    first, second = r["executors"]
    assert r["host_readers"] == 2
    assert set(r["hosts_after_moves"]) == {first}
    assert {first, second} <= set(r["hosts_after_rebalance"])
    assert {m["reason"] for m in r["moves"]} >= {"move", "rebalance"}


@pytest.mark.slow
def test_continuous_change_stream_has_each_final_pair_once_across_the_moves(continuous_run):
    out, r = continuous_run
    u = pd.Timestamp(r["update"])
    history = accepted_updates(make_workload(SEED, keys=40, changes_per_key=8, events=10))
    history = history.assign(ts=utc(history["ts"]))
    want = sorted(zip(*(history[history["ts"] < u][c] for c in ("ad_id", "campaign", "ts"))))
    got = pd.read_parquet(out / "changes.parquet")
    rows = sorted(zip(got["ad_id"], got["campaign"], utc(got["campaigns_time"])))
    assert len(rows) == len(set(rows)), "a pair was delivered twice"
    assert rows == want
