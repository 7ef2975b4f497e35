"""Snapshots of a durable State are taken while its writer keeps committing; the retention policy
then trims the changelog to what the oldest kept snapshot does not hold (a Delta delete: older table
versions still read it), and a new application recovers from snapshot + changelog to the oracle."""

from __future__ import annotations

import contextlib
import os
import time

import pandas as pd
from deltalake import DeltaTable

import sharedstate as ss
from sharedstate.testing.adcamp import UPDATE_SCHEMA, accepted_updates, make_workload, to_spark_parquet
from sharedstate.testing.streams import wait_until
from test_durability import oracle_as_of, read_in_new_application


def add_files(directory, frames, first: int) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    base = time.time() - 10_000
    for i, frame in enumerate(frames, start=first):
        path = directory / f"part-{i:05d}.parquet"
        to_spark_parquet(frame, path)
        os.utime(path, (base + i, base + i))


@contextlib.contextmanager
def full_snapshots(spark):
    """Every snapshot full (spark.sharedstate.snapshot.fullEvery = 1) for States created inside: each
    snapshot is a restore point on its own, so retention trims at every round."""
    spark.conf.set("spark.sharedstate.snapshot.fullEvery", "1")
    try:
        yield
    finally:
        spark.conf.unset("spark.sharedstate.snapshot.fullEvery")


def write_update_files(spark, state_name: str, workdir, lateness_us: int) -> None:
    """Runs the updates under workdir/updates through the sink, one file per batch, until all are in."""
    q = (
        spark.readStream.schema(UPDATE_SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .parquet(str(workdir / "updates"))
        .writeStream.format("sharedstate")
        .option("state", state_name)
        .option("key", "ad_id")
        .option("time", "ts")
        .option("lateness", f"{lateness_us // 1_000_000} seconds")
        .option("checkpointLocation", str(workdir / "ck"))
        .start()
    )
    q.processAllAvailable()
    q.stop()


def test_snapshots_trim_the_changelog_and_recovery_uses_them(spark, workdir, state_name):
    work = make_workload(seed=41, keys=20, changes_per_key=10, late_fraction=0.1)
    batches = work.update_batches
    thirds = [
        batches[: len(batches) // 3],
        batches[len(batches) // 3 : 2 * len(batches) // 3],
        batches[2 * len(batches) // 3 :],
    ]
    root = workdir / "root"
    with full_snapshots(spark):
        state = ss.State.create(
            spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=4, root=str(root)
        )
    add_files(workdir / "updates", thirds[0], first=0)
    q = (
        spark.readStream.schema(UPDATE_SCHEMA)
        .option("maxFilesPerTrigger", 1)
        .parquet(str(workdir / "updates"))
        .writeStream.format("sharedstate")
        .option("state", state_name)
        .option("key", "ad_id")
        .option("time", "ts")
        .option("lateness", f"{work.lateness_us // 1_000_000} seconds")
        .option("checkpointLocation", str(workdir / "ck"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )
    changelog_path = str(root / state_name / "changelog")

    def update_rows() -> int:
        rows = DeltaTable(changelog_path).to_pandas()
        return int(rows["event"].isna().sum())

    q.processAllAvailable()
    first = state.snapshot()
    assert first["written"] == 4 and not first["changelog_trimmed"], "one snapshot per partition: nothing to trim yet"
    rows_after_first = update_rows()
    assert rows_after_first == sum(len(b) for b in thirds[0])

    # More epochs, with a snapshot taken while they are being committed.
    version_after_first = DeltaTable(changelog_path).version()
    add_files(workdir / "updates", thirds[1], first=len(thirds[0]))
    wait_until(lambda: DeltaTable(changelog_path).version() > version_after_first, timeout=60, what="a new epoch")
    second = state.snapshot()
    q.processAllAvailable()
    assert second["written"] == 4
    # Two snapshots kept per partition: the changelog drops the updates the first snapshot holds.
    assert second["changelog_trimmed"]
    version_before_third = DeltaTable(changelog_path).version()
    add_files(workdir / "updates", thirds[2], first=len(thirds[0]) + len(thirds[1]))
    q.processAllAvailable()
    q.stop()
    third = state.snapshot()
    assert third["written"] == 4 and third["snapshots_removed"]
    remaining = update_rows()
    assert remaining < len(work.updates) - rows_after_first, "the changelog was trimmed"
    # Time travel on the changelog still reads what was trimmed later (until Delta's VACUUM).
    old = DeltaTable(changelog_path, version=version_before_third).to_pandas()
    assert int(old["event"].isna().sum()) > 0
    snaps = DeltaTable(str(root / state_name / "snapshots")).to_pandas()
    assert snaps.groupby("partition")["snapshot_id"].nunique().max() == 2

    u = pd.Timestamp(state.progress()["update"])
    accepted = accepted_updates(work)
    probes = [str(t) for t in (u - pd.Timedelta(seconds=s) for s in (1, 200, 500))]
    there = read_in_new_application(root, state_name, probes, workdir / "recovered.json")
    for t in probes:
        assert there["as_of"][t] == oracle_as_of(accepted, pd.Timestamp(t)), t
    assert pd.Timestamp(there["update"]) == u


def test_delta_snapshots_hold_only_changed_keys_and_recover(spark, workdir, state_name):
    """With the default fullEvery (8), the snapshots after the first hold only the keys changed since;
    delta-rs reads the chain from the snapshots table, and a new application recovers from it."""
    work = make_workload(seed=43, keys=40, changes_per_key=6, late_fraction=0.1)
    batches = work.update_batches
    root = workdir / "root"
    state = ss.State.create(
        spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=2, root=str(root)
    )
    add_files(workdir / "updates", batches[:-2], first=0)
    write_update_files(spark, state_name, workdir, work.lateness_us)
    first = state.snapshot()
    assert first["written"] == 2 and first["deltas"] == 0
    u1 = pd.Timestamp(state.progress()["update"])
    add_files(workdir / "updates", batches[-2:], first=len(batches) - 2)
    write_update_files(spark, state_name, workdir, work.lateness_us)
    second = state.snapshot()
    u2 = pd.Timestamp(state.progress()["update"])
    # The keys changed between the snapshots: those with an accepted update in [U1, U2) (no reader: no compaction).
    accepted = accepted_updates(work)
    ts = accepted["ts"].map(lambda t: pd.Timestamp(t).tz_localize(None) if pd.Timestamp(t).tzinfo else pd.Timestamp(t))
    u1n, u2n = (t.tz_localize(None) if t.tzinfo else t for t in (u1, u2))
    changed = set(accepted[(ts >= u1n) & (ts < u2n)]["ad_id"])
    assert second["written"] == 2 and second["deltas"] == 2
    assert second["entries"] == len(changed) and 0 < len(changed) < first["entries"], (first, second, len(changed))
    assert second["bytes"] < first["bytes"]

    snaps = DeltaTable(str(root / state_name / "snapshots")).to_pandas()
    per_id = snaps.groupby(["partition", "snapshot_id"]).first().reset_index()
    fulls = per_id[per_id["base_id"].isna()]
    deltas = per_id[per_id["base_id"].notna()]
    assert len(fulls) == 2 and len(deltas) == 2
    for _, d in deltas.iterrows():
        base = fulls[fulls["partition"] == d["partition"]]["snapshot_id"].iloc[0]
        assert d["base_id"] == base and d["parent_id"] == base and d["snapshot_id"] > base

    u = u2
    probes = [str(t) for t in (u - pd.Timedelta(seconds=s) for s in (1, 100, 300))]
    there = read_in_new_application(root, state_name, probes, workdir / "recovered.json")
    for t in probes:
        assert there["as_of"][t] == oracle_as_of(accepted, pd.Timestamp(t)), t
    assert pd.Timestamp(there["update"]) == u


def test_rounds_start_on_change_at_a_bulk_loads_end_and_after_a_streaming_commit(spark, workdir, state_name):
    """spark.sharedstate.snapshot.afterUpdates: a bulk load that makes a partition apply that many
    updates returns with its data in snapshots; a smaller one starts no round; a streaming commit past
    it starts one in the background (a delta on the bulk load's snapshot)."""
    root = workdir / "root"
    spark.conf.set("spark.sharedstate.snapshot.afterUpdates", "100")
    try:
        state = ss.State.create(spark, state_name, key="k BIGINT", value="v BIGINT", partitions=2, root=str(root))
    finally:
        spark.conf.unset("spark.sharedstate.snapshot.afterUpdates")

    def load(n: int, first: int, t: str) -> None:
        rows = spark.range(first, first + n).selectExpr("id AS k", "id * 7 AS v", f"TIMESTAMP '{t}' AS ts")
        rows.write.format("sharedstate").mode("append").option("state", state_name).option("key", "k").option(
            "time", "ts"
        ).save()

    load(600, 0, "2026-01-01 00:00:00")  # about 300 per partition
    rounds = state.snapshot_rounds()
    assert [r["trigger"] for r in rounds] == ["bulk load"], rounds
    assert rounds[0]["written"] == 2 and rounds[0]["entries"] == 600, rounds
    load(20, 600, "2026-01-01 00:01:00")  # about 10 per partition: below the threshold
    assert len(state.snapshot_rounds()) == 1

    # A stream with no lateness: each epoch's U is its newest time, so its rows below it are applied.
    updates = workdir / "stream"
    updates.mkdir()
    start = pd.Timestamp("2026-01-01 00:02:00")
    frame = pd.DataFrame(
        {"k": range(1000, 1400), "v": range(400), "ts": [start + pd.Timedelta(seconds=i) for i in range(400)]}
    )
    frame.to_parquet(updates / "part-0.parquet", index=False, coerce_timestamps="us", allow_truncated_timestamps=True)
    q = (
        spark.readStream.schema("k BIGINT, v BIGINT, ts TIMESTAMP")
        .parquet(str(updates))
        .writeStream.format("sharedstate")
        .option("state", state_name)
        .option("key", "k")
        .option("time", "ts")
        .option("lateness", "0 seconds")
        .option("checkpointLocation", str(workdir / "ck"))
        .start()
    )
    try:
        q.processAllAvailable()
        wait_until(lambda: len(state.snapshot_rounds()) >= 2, timeout=60)
    finally:
        q.stop()
    second = state.snapshot_rounds()[1]
    assert second["trigger"] == "updates" and second["deltas"] == 2, second
    assert second["entries"] >= 399, (
        second
    )  # the stream's keys (the newest may wait for the next U) and the small load's
    snaps = DeltaTable(str(root / state_name / "snapshots")).to_pandas()
    assert len(snaps.groupby(["partition", "snapshot_id"])) == 4
