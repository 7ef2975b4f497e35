"""Real-time mode with State partitions on two executor JVMs (it/apps/cluster_realtime_app.py): the
updater's partition writers commit from executors, the enricher's read-committed fetches wait for U
on both hosts, and the State's change stream runs as a real-time source with a reader per host.
Every enriched view equals the offline as-of join over the updates, every update counts once, and
the change stream emits every update U passed exactly once, across its epochs. Run once with the
delivery lanes off and once on."""

from __future__ import annotations

import bisect
from collections import defaultdict

import pytest

from cluster_apps import run_cluster_app


def as_of(updates: list, key: str, t: int):
    """The newest update of `key` at or before `t` (the offline oracle)."""
    rows = sorted((u["ts_us"], u["campaign"]) for u in updates if u["ad_id"] == key)
    i = bisect.bisect_right([ts for ts, _ in rows], t)
    return rows[i - 1][1] if i else None


@pytest.mark.slow
@pytest.mark.parametrize("lanes", [False, True], ids=["direct", "lanes"])
def test_realtime_updater_and_fetch_across_executors(tmp_path, lanes):
    records = run_cluster_app("cluster_realtime_app.py", tmp_path, *(["lanes"] if lanes else []))
    hosts = records["hosts"]
    assert len(set(hosts)) == 2 and "driver" not in hosts, hosts
    assert sorted(records["writers"]) == [f"{records['updater_id']}#p{p}" for p in range(2)]
    # each update counts once (a flush committed twice would count its rows again)
    assert records["updates_applied"] + records["updates_waiting"] == len(records["updates"])
    answers = defaultdict(set)
    for r in records["enriched"]:
        answers[r["event_id"]].add(r.get("campaign"))  # to_json leaves a null out
    views = {v["event_id"]: v for v in records["views"]}
    assert set(answers) == set(views), "a view is missing from the output"
    wrong = [
        (i, got, as_of(records["updates"], views[i]["ad_id"], views[i]["ts_us"]))
        for i, got in answers.items()
        if got != {as_of(records["updates"], views[i]["ad_id"], views[i]["ts_us"])}
    ]
    assert not wrong, f"{len(wrong)} answers differ from the as-of oracle, e.g. {wrong[:3]}"
    # The real-time change stream, one reader per host, across epochs: each update U passed, exactly once.
    assert records["change_epochs"] >= 1 and records["change_plans"]["host"] >= 2, records["change_plans"]
    got = sorted((c["ad_id"], c["campaign"], c["ts_us"]) for c in records["changes"])
    final = records["updates"][:-2]  # the last sentinels stay at U
    assert got == sorted((u["ad_id"], u["campaign"], u["ts_us"]) for u in final)
