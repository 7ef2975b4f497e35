"""The rejected table of a durable State (`<root>/<state>/rejected`): every update the State rejects
(late at its epoch's commit, a null key, a null time) is a row of it, exactly once, and the State's
rejected read returns that whole history, also in a fresh application that recovered from a snapshot
(whose in-memory list only knows the rejections replayed after the snapshot). The oracle is computed
here from the input alone: U before a batch is the max time of the earlier batches minus the lateness."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
from deltalake import DeltaTable

import sharedstate as ss
from sharedstate.testing.adcamp import make_workload
from test_durability import read_in_new_application
from test_durability_delta_rs import unsafe_row_string
from test_durability_snapshots import add_files, write_update_files


def with_null_keys_and_times(batches: list[pd.DataFrame], seed: int) -> list[pd.DataFrame]:
    """Adds rows with a null key (at a time already in the batch, so U is unchanged) and rows with a
    null time to some batches."""
    rng = np.random.default_rng(seed)
    out = []
    for i, b in enumerate(batches):
        b = b.copy()
        extra = []
        if i % 3 == 1:
            extra.append(pd.DataFrame({"ad_id": [None], "ts": [b["ts"].iloc[0]], "campaign": [f"nokey{i}"]}))
        if i % 4 == 2:
            extra.append(
                pd.DataFrame(
                    {"ad_id": [f"ad{int(rng.integers(0, 5)):03d}"], "ts": [pd.NaT], "campaign": [f"notime{i}"]}
                )
            )
        if extra:
            b = pd.concat([b, *extra], ignore_index=True).sample(frac=1.0, random_state=i).reset_index(drop=True)
            b["ts"] = pd.to_datetime(b["ts"], utc=True)
        out.append(b)
    return out


def oracle_rejected(batches: list[pd.DataFrame], lateness_us: int) -> list[tuple]:
    """(reason, ad_id, time in micros) of every update the State must reject."""
    rejected = []
    u = None
    for b in batches:
        for ad, ts in zip(b["ad_id"], b["ts"]):
            if ad is None:
                rejected.append(("null_key", None, None if pd.isna(ts) else pd.Timestamp(ts).value // 1000))
            elif pd.isna(ts):
                rejected.append(("null_time", ad, None))
            elif u is not None and pd.Timestamp(ts).value // 1000 < u:
                rejected.append(("late", ad, pd.Timestamp(ts).value // 1000))
        times = [pd.Timestamp(t).value // 1000 for a, t in zip(b["ad_id"], b["ts"]) if a is not None and not pd.isna(t)]
        if times:
            u = max(times) - lateness_us if u is None else max(u, max(times) - lateness_us)
    return sorted(rejected, key=json.dumps)


def micros(t) -> int | None:
    """A naive datetime as PySpark collects a TIMESTAMP (local time) to micros since the epoch."""
    return None if t is None else int(t.timestamp()) * 1_000_000 + t.microsecond


def spark_rows(df) -> list[tuple]:
    return sorted(
        ((r.reason, r.key.ad_id if r.key is not None else None, micros(r.time)) for r in df.collect()), key=json.dumps
    )


def test_rejected_table_holds_every_rejection_once_also_after_a_snapshot_and_restart(spark, workdir, state_name):
    work = make_workload(seed=5, keys=15, changes_per_key=8, late_fraction=0.15)
    batches = with_null_keys_and_times(work.update_batches, seed=5)
    expected = oracle_rejected(batches, work.lateness_us)
    reasons = {r[0] for r in expected}
    assert reasons == {"late", "null_key", "null_time"}, reasons
    root = workdir / "root"
    state = ss.State.create(
        spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=3, root=str(root)
    )
    half = len(batches) // 2

    def run(part: list[pd.DataFrame], first: int) -> None:
        add_files(workdir / "updates", part, first)
        write_update_files(spark, state_name, workdir, work.lateness_us)

    run(batches[:half], 0)
    assert state.snapshot()["written"] == 3  # the fresh application below recovers from it
    run(batches[half:], half)

    assert spark_rows(state.late_updates()) == expected

    # delta-rs reads the table: one row per rejection, each tagged with the journal event and U.
    table = DeltaTable(str(root / state_name / "rejected")).to_pandas()
    got = sorted(
        (
            (r, None if k is None else unsafe_row_string(k), None if pd.isna(t) else int(t))
            for r, k, t in zip(table["reason"], table["key"], table["timestamp"])
        ),
        key=json.dumps,
    )
    assert got == expected
    late = table[table["reason"] == "late"]
    assert (late["timestamp"] < late["update_progress"]).all()
    changelog = DeltaTable(str(root / state_name / "changelog")).to_pandas()
    commits = changelog[changelog["event"] == "commit"].set_index(["writer", "epoch"])
    decided = late.join(commits[["commit_seq", "update_progress"]], on=["writer", "epoch"], rsuffix="_commit")
    assert (decided["commit_seq"] == decided["commit_seq_commit"]).all()
    assert (decided["update_progress"] == decided["update_progress_commit"]).all()

    # A fresh application that owns the root (this one lets go of it) recovers from the snapshot and
    # still reads every rejection, none twice.
    state.drop()
    there = read_in_new_application(root, state_name, [], workdir / "recovered.json")
    assert there["read_only"] is False
    assert (
        sorted(
            ((x[2], x[0], None if x[1] is None else micros(pd.Timestamp(x[1]).to_pydatetime())) for x in there["late"]),
            key=json.dumps,
        )
        == expected
    )
    assert len(DeltaTable(str(root / state_name / "rejected")).to_pandas()) == len(expected)
