"""Continuous mode with State partitions on two real executor JVMs (local-cluster[2,3,1024],
spark.authenticate on; it/apps/cluster_continuous_app.py says why 3 cores): a continuous writer, a
continuous fetch join and the continuous change stream of one State at once, fed by Spark's rate
source, each checked offline against the rate source's arithmetic and the as-of join
(sharedstate.testing.oracles, the oracles of the local tests).
"""

from __future__ import annotations

import pandas as pd
import pytest

from cluster_apps import run_cluster_app
from sharedstate.testing.oracles import asof_expected, rate_prefix_gaps, utc


@pytest.fixture(scope="module")
def continuous_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("cluster-continuous")
    return out, run_cluster_app("cluster_continuous_app.py", out)


def _load(out, name: str) -> pd.DataFrame:
    frame = pd.read_pickle(out / f"{name}.pkl")
    for column in ("ts", "update_progress", "rates_time"):
        if column in frame:
            frame[column] = utc(frame[column])
    return frame


def _update_time(records, v) -> pd.Timestamp:
    """The time the writer gave the update with rate-source value v."""
    return pd.Timestamp(records["base_us"] + v * records["step_us"], unit="us", tz="UTC")


def _history(out, records) -> pd.DataFrame:
    """The accepted updates, from the values the writer's source emitted (held or listed late, which
    test_continuous_writer... checks is a gap-free prefix per partition) minus the late ones."""
    late = set(_load(out, "late")["v"])
    emitted = set(_load(out, "held")["v"]) | late
    values = sorted(emitted - late)
    return pd.DataFrame(
        {"k": [v % records["keys"] for v in values], "ts": [_update_time(records, v) for v in values], "v": values}
    )


@pytest.mark.slow
def test_partitions_and_fetched_keys_span_both_executors(continuous_run):
    out, records = continuous_run
    hosts = records["hosts"]
    assert len(hosts) == 2 and len(set(hosts)) == 2 and "driver" not in hosts
    # the join's one task fetches every key, and the keys live on both executors: some fetches are remote
    owners = _load(out, "key_partitions")
    assert {hosts[p] for p in owners["partition"]} == set(hosts)
    assert set(owners["k"]) == set(range(records["keys"]))


@pytest.mark.slow
def test_continuous_writer_applies_each_final_update_exactly_once(continuous_run):
    out, records = continuous_run
    held, late = _load(out, "held"), _load(out, "late")
    u = pd.Timestamp(records["progress"]["update"])
    values = list(held["v"]) + list(late["v"])
    assert len(values) == len(set(values)), "an update was applied twice, or applied and listed late"
    assert not rate_prefix_gaps(values, records["writer_partitions"]), "an update of the source was lost"
    assert (held["k"] == held["v"] % records["keys"]).all(), "a value landed under the wrong key"
    assert (held["ts"] == [_update_time(records, v) for v in held["v"]]).all(), "a value landed at the wrong time"
    assert (held["ts"] < u).all()
    assert records["progress"]["updates_applied"] == len(held) >= 200
    assert records["progress"]["updates_rejected"] == len(late)
    assert set(late["reason"]) <= {"late"} and (late["ts"] < late["update_progress"]).all(), "listed late but was not"


@pytest.mark.slow
def test_continuous_fetch_join_equals_offline_asof_join(continuous_run):
    out, records = continuous_run
    got = _load(out, "joined")
    assert got["event_id"].is_unique, "an event was answered twice"
    # the rate source numbers events 0, 1, 2, ...: every event up to the last answered one is there
    assert sorted(got["event_id"]) == list(range(len(got))) and len(got) >= 150
    assert (got["ts"] < pd.Timestamp(records["progress"]["update"])).all(), "answered before U passed it"
    expected = (
        asof_expected(
            got[["event_id", "k", "ts"]], _history(out, records), key="k", value="v", time_column="rates_time"
        )
        .sort_values("event_id")
        .reset_index(drop=True)
    )
    got = got.sort_values("event_id").reset_index(drop=True)
    want = [None if pd.isna(x) else int(x) for x in expected["want"]]
    have = [None if pd.isna(x) else int(x) for x in got["v"]]
    wrong = [(i, a, b) for i, a, b in zip(got["event_id"], have, want) if a != b]
    assert not wrong, f"{len(wrong)} of {len(got)} answers differ, first: {wrong[:3]}"
    assert (
        got["rates_time"]
        .fillna(pd.Timestamp(0, tz="UTC"))
        .equals(utc(expected["rates_time"]).fillna(pd.Timestamp(0, tz="UTC")))
    )
    assert sum(v is not None for v in have) >= 100, "most events found a value"
    # the events started before the writer, so they waited in the owners' pending queues
    assert records["pending_max"] > 0


@pytest.mark.slow
def test_continuous_change_stream_delivers_each_final_update_once(continuous_run):
    out, records = continuous_run
    rows = _load(out, "changes")
    got = list(zip(rows["k"], rows["v"], rows["rates_time"]))
    assert len(got) == len(set(got)), "a change was delivered twice"
    history = _history(out, records)
    history = history[history["ts"] < pd.Timestamp(records["progress"]["update"])]
    assert set(got) == set(zip(history["k"], history["v"], history["ts"]))
    # through the hosts' feeds (one reader per executor host on its subscription), not by scan
    assert records["change_plans"]["host"] >= 1 and records["change_plans"]["scan"] == 0, records["change_plans"]
