"""Live partition moves on two real executor JVMs (local-cluster[2,1,1024]) while a writer, a fetch
join and a change stream run on the State, for an in-memory and a durable State: every partition is
moved onto one executor (State.move), spread again (State.rebalance), handed over by an executor
being decommissioned (Spark's graceful decommissioning) and rebalanced onto the executor that
replaces it. Every fetch-join row equals the offline as-of oracle, each event once; the change
stream has every final pair exactly once (no duplicate, no gap); late updates are counted once.

The session runs in a subprocess (it/apps/elastic_app.py, started by cluster_apps.run_cluster_app).
"""

from __future__ import annotations

import pandas as pd
import pytest

from cluster_apps import run_cluster_app
from sharedstate.testing.adcamp import accepted_updates, comparable, expected_late, make_workload, oracle, utc

SEED = 2031


def workload():
    return make_workload(SEED, keys=40, changes_per_key=8, events=1500)


@pytest.fixture(scope="module", params=["memory", "durable"])
def elastic_run(request, tmp_path_factory):
    out = tmp_path_factory.mktemp(f"elastic-{request.param}")
    return out, run_cluster_app("elastic_app.py", out, str(SEED), request.param)


@pytest.mark.slow
def test_partitions_move_by_hand_by_rebalance_and_around_a_decommissioned_executor(elastic_run):
    _, r = elastic_run
    first, second = r["executors"]
    assert sorted(set(r["hosts_at_start"])) == [first, second]
    assert r["explicit_moves"] and all(m["reason"] == "move" and m["to"] == first for m in r["explicit_moves"])
    assert set(r["hosts_after_moves"]) == {first}
    assert {m["reason"] for m in r["rebalance_moves"]} == {"rebalance"}
    assert sorted(r["hosts_after_rebalance"].count(h) for h in (first, second)) == [4, 4]
    assert r["decommission_started"]
    assert set(r["hosts_after_decommission"]) == {first}, "the decommissioned executor handed everything over"
    replacement = set(r["hosts_after_replacement"]) - {first, second}
    assert len(replacement) == 1 and sorted(r["hosts_after_replacement"].count(h) for h in {first, *replacement}) == [
        4,
        4,
    ]
    reasons = [m["reason"] for m in r["moves"]]
    assert {"move", "rebalance", "decommission", "executor added"} <= set(reasons)
    assert all(m["millis"] >= 0 for m in r["moves"])


@pytest.mark.slow
def test_fetch_join_rows_equal_the_as_of_oracle_across_the_moves(elastic_run):
    out, _ = elastic_run
    work = workload()
    got = pd.read_parquet(out / "joined.parquet").rename(columns={"campaigns_time": "value_time"})
    expected = oracle(work.events, accepted_updates(work), time_column="value_time")
    assert got["event_id"].is_unique, "an event was emitted twice"
    assert len(got) == len(work.events)
    pd.testing.assert_frame_equal(comparable(got), comparable(expected), check_dtype=False)


def _change_pairs(out, r):
    u = pd.Timestamp(r["update"])
    history = accepted_updates(workload()).assign(ts=lambda d: utc(d["ts"]))
    want = sorted(zip(*(history[history["ts"] < u][c] for c in ("ad_id", "campaign", "ts"))))
    got = pd.read_parquet(out / "changes.parquet")
    return sorted(zip(got["ad_id"], got["campaign"], utc(got["campaigns_time"]))), want


@pytest.mark.slow
def test_change_stream_has_no_pair_twice_and_none_that_was_not_applied(elastic_run):
    rows, want = _change_pairs(*elastic_run)
    assert len(rows) == len(set(rows)), "a pair was delivered twice"
    assert set(rows) <= set(want)


@pytest.mark.slow
def test_change_stream_has_each_final_pair_across_the_moves(elastic_run):
    rows, want = _change_pairs(*elastic_run)
    assert rows == want


@pytest.mark.slow
def test_late_updates_and_keys_are_counted_once_across_the_moves(elastic_run):
    _, r = elastic_run
    assert r["updates_rejected"] == len(expected_late(workload()))
    assert r["keys"] == 40  # the end marker waits above U: staged, not a key yet
