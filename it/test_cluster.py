"""State partitions on two real executor JVMs (local-cluster[2,1,1024], spark.authenticate on): a
writer and a fetch join at once on randomised out-of-order input, as-of reads, the late-updates table
and sharedstate_fetch, each checked against the offline as-of oracle; then a writer that restarts
from its checkpoint and a second writer that holds U back until it commits.

The session runs in a subprocess (it/apps/cluster_app.py, started by cluster_apps.run_cluster_app).
"""

from __future__ import annotations

import pandas as pd
import pytest

from cluster_apps import run_cluster_app
from sharedstate.testing.adcamp import accepted_updates, comparable, expected_late, make_workload, oracle, utc

SEED = 2027


@pytest.fixture(scope="module")
def cluster_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("cluster")
    return out, run_cluster_app("cluster_app.py", out, str(SEED))


@pytest.mark.slow
def test_partitions_are_spread_over_both_executors(cluster_run):
    _, records = cluster_run
    hosts = records["hosts"]
    assert len(hosts) == 4 and "driver" not in hosts
    assert len(set(hosts)) == 2, f"each executor owns some partitions (so some access is remote): {hosts}"


@pytest.mark.slow
def test_fetch_join_on_two_executors_equals_offline_asof_join(cluster_run):
    out, _ = cluster_run
    work = make_workload(SEED)
    got = pd.read_parquet(out / "joined.parquet").rename(columns={"campaigns_time": "value_time"})
    expected = oracle(work.events, accepted_updates(work), time_column="value_time")
    assert got["event_id"].is_unique, "an event was emitted twice"
    assert len(got) == len(work.events)
    pd.testing.assert_frame_equal(comparable(got), comparable(expected), check_dtype=False)
    assert expected["campaign"].isna().any() and expected["campaign"].notna().any()


@pytest.mark.slow
def test_sql_fetch_on_two_executors_equals_offline_asof_join(cluster_run):
    out, _ = cluster_run
    work = make_workload(SEED)
    got = pd.read_parquet(out / "sql.parquet").sort_values("event_id").reset_index(drop=True)
    expected = oracle(work.events, accepted_updates(work), time_column="value_time").sort_values("event_id")
    assert list(got["event_id"]) == list(expected["event_id"])
    assert list(got["campaign"].where(got["campaign"].notna(), None)) == list(
        expected["campaign"].astype(object).where(expected["campaign"].notna(), None)
    )
    both = got["value_time"].notna()
    assert (
        utc(got["value_time"][both]).values == utc(expected["value_time"].reset_index(drop=True)[both]).values
    ).all()


@pytest.mark.slow
def test_late_updates_and_as_of_reads_gather_every_host(cluster_run):
    out, records = cluster_run
    work = make_workload(SEED)
    late = expected_late(work)
    listed = pd.read_parquet(out / "late.parquet")
    assert len(late) > 0 and set(listed["reason"]) == {"late"}
    assert sorted(zip(listed["ad_id"], utc(listed["ts"]))) == sorted(zip(late["ad_id"], utc(late["ts"])))
    assert records["progress"]["updates_rejected"] == len(late)
    history = accepted_updates(work).assign(ts=lambda d: utc(d["ts"]))
    for seconds in (45, 200, 599):
        t = pd.Timestamp(seconds, unit="s", tz="UTC")
        want = history[history["ts"] <= t].sort_values("ts").groupby("ad_id").tail(1)
        got = pd.read_parquet(out / f"asof_{seconds}.parquet")
        assert sorted(zip(got["ad_id"], got["campaign"], utc(got["campaigns_time"]))) == sorted(
            zip(want["ad_id"], want["campaign"], want["ts"])
        ), f"as of {t}"


@pytest.mark.slow
def test_change_stream_reads_every_final_pair_from_every_host(cluster_run):
    out, records = cluster_run
    u = pd.Timestamp(records["progress"]["update"])
    history = accepted_updates(make_workload(SEED)).assign(ts=lambda d: utc(d["ts"]))
    want = history[history["ts"] < u]
    got = pd.read_parquet(out / "changes.parquet")
    assert len(got) == len(want) > 0
    assert sorted(zip(got["ad_id"], got["campaign"], utc(got["campaigns_time"]))) == sorted(
        zip(want["ad_id"], want["campaign"], want["ts"])
    )


@pytest.mark.slow
def test_change_stream_reads_each_host_feed_once_across_a_restart(cluster_run):
    out, records = cluster_run
    u = pd.Timestamp(records["progress"]["update"])
    history = accepted_updates(make_workload(SEED)).assign(ts=lambda d: utc(d["ts"]))
    want = history[history["ts"] < u]
    got = pd.read_parquet(out / "host_changes.parquet")
    got["campaigns_time"] = utc(got["campaigns_time"])
    # every final pair exactly once, over the batches of both runs (the query restarted from its checkpoint)
    assert sorted(zip(got["ad_id"], got["campaign"], got["campaigns_time"])) == sorted(
        zip(want["ad_id"], want["campaign"], want["ts"])
    )
    # read through the hosts' feeds: one input partition per executor host, never the per-partition scan
    assert set(records["host_batch_partitions"].values()) == {2}, records["host_batch_partitions"]
    assert records["change_plans"]["host"] >= 2 and records["change_plans"]["scan"] == 0, records["change_plans"]
    # each input partition is one host's changes merged in timestamp order
    for _, part in got.groupby(["batch", "input_partition"]):
        assert part.sort_values("index")["campaigns_time"].is_monotonic_increasing
    assert records["host_batches_before_restart"] and got["batch"].nunique() >= 1


@pytest.mark.slow
def test_restarted_writer_resumes_and_new_writer_holds_u_back(cluster_run):
    _, records = cluster_run
    r = records["restart"]
    w1, w2 = r["query_id"], r["second_writer_id"]
    # the writer is the query (stable across runs), not the run
    assert r["first_run"] != r["second_run"]
    assert r["after_first_run"] == {"update": 30.0, "writers": {w1: 30.0}}
    assert r["after_stop"] == r["after_first_run"]
    assert r["after_restart"] == {"update": 30.0, "writers": {w1: 30.0}}, "the restarted writer resumes its progress"
    assert r["after_more_input"] == {"update": 60.0, "writers": {w1: 60.0}}
    # a new writer joins at U and holds it there until it commits
    assert r["after_second_writer_starts"] == {"update": 60.0, "writers": {w1: 60.0, w2: 60.0}}
    assert not r["second_writer_had_committed"], "the slow first batch of the second writer was still running"
    assert r["first_writer_moves_on"] == {"update": 60.0, "writers": {w1: 90.0, w2: 60.0}}
    assert r["second_writer_commits"] == {"update": 90.0, "writers": {w1: 90.0, w2: 100.0}}
