"""The Delta tables of a durable State are valid Delta: delta-rs (the `deltalake` package, an
independent reader) reads them, finds one transaction per committed epoch, and a replay written
here in pandas from what it read (lateness from each commit's U) gives the State's own answers."""

from __future__ import annotations

import json

import pandas as pd
from deltalake import DeltaTable

import sharedstate as ss
from sharedstate.testing.adcamp import make_workload
from test_durability import stream_updates


def unsafe_row_string(data: bytes) -> str:
    """The first (only) STRING field of a Spark UnsafeRow: null bits, then offset<<32 | size."""
    word = int.from_bytes(data[8:16], "little")
    offset, size = word >> 32, word & 0xFFFFFFFF
    return data[offset : offset + size].decode("utf-8")


def test_delta_rs_reads_the_tables_and_a_pandas_replay_equals_the_state(spark, workdir, state_name):
    work = make_workload(seed=23, keys=12, changes_per_key=6, late_fraction=0.15)
    root = workdir / "root"
    state = ss.State.create(
        spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=4, root=str(root)
    )
    stream_updates(spark, work, state_name, workdir)

    changelog = DeltaTable(str(root / state_name / "changelog"))
    rows = changelog.to_pandas()
    assert set(rows["partition"]) <= {-1, 0, 1, 2, 3}
    events = rows[rows["event"].notna()].sort_values("commit_seq")
    commits = events[events["event"] == "commit"]
    writer = commits["writer"].iloc[0]
    assert len(commits) == len(work.update_batches)
    # Delta's SetTransaction: the writer's last epoch, as delta-rs reads it from the log.
    assert changelog.transaction_version(writer) == commits["epoch"].max()

    updates = rows[rows["event"].isna()].copy()
    assert len(updates) == len(work.updates)
    updates["ad_id"] = updates["key"].map(unsafe_row_string)
    updates["campaign"] = updates["value"].map(unsafe_row_string)
    u_at = dict(zip(zip(commits["writer"], commits["epoch"]), commits["update_progress"]))
    updates["late"] = [t < u_at[(w, e)] for w, e, t in zip(updates["writer"], updates["epoch"], updates["timestamp"])]
    accepted = updates[~updates["late"]]

    # Each key is in the partition the State put it in: one key, one partition.
    assert (updates.groupby("ad_id")["partition"].nunique() == 1).all()

    u = pd.Timestamp(state.progress()["update"])
    for back in (1, 120, 400):
        t = u - pd.Timedelta(seconds=back)
        micros = int(t.value // 1000)
        upto = accepted[accepted["timestamp"] <= micros].sort_values("timestamp")  # times are unique per key
        want = sorted(upto.groupby("ad_id").tail(1)[["ad_id", "campaign"]].itertuples(index=False, name=None))
        got = sorted((r.ad_id, r.campaign) for r in state.as_of(str(t)).collect())
        assert got == want, t
    late_here = sorted(zip(updates[updates["late"]]["ad_id"], updates[updates["late"]]["timestamp"]))
    late_state = sorted(
        (r.key.ad_id, int(pd.Timestamp(r.time, tz="UTC").value // 1000)) for r in state.late_updates().collect()
    )
    assert late_here == late_state and len(late_here) > 0

    metadata = DeltaTable(str(root / state_name / "metadata")).to_pandas()
    spec = json.loads(metadata["spec"].iloc[0])
    assert (spec["name"], spec["partitions"], spec["updateRule"]) == (state_name, 4, "replace")
