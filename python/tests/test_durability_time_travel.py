"""as_of on a durable State for times compaction has dropped from memory: answered from the Delta
tables (the changelog from its start while retention has trimmed nothing, later the newest snapshot
taken at or before the time plus the changelog after it), equal to the oracle; a time older than
retention keeps is an error naming the oldest time still available."""

from __future__ import annotations

import pandas as pd
import pytest

import sharedstate as ss
from sharedstate.testing.adcamp import accepted_updates, make_workload
from test_durability import oracle_as_of
from test_durability_snapshots import add_files, full_snapshots, write_update_files


def test_as_of_below_compaction_and_retention(spark, workdir, state_name):
    work = make_workload(seed=31, keys=10, changes_per_key=12, late_fraction=0.05)
    batches = work.update_batches
    cut = [0, len(batches) // 3, 2 * len(batches) // 3, len(batches)]
    accepted = accepted_updates(work)
    root = workdir / "root"
    with full_snapshots(spark):  # each snapshot a restore point on its own: the second one trims
        state = ss.State.create(
            spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=2, root=str(root)
        )
    reader = (
        state.changes()
        .writeStream.format("noop")
        .option("checkpointLocation", str(workdir / "ck-changes"))
        .trigger(processingTime="200 milliseconds")
        .start()
    )  # a reader: its progress is F

    def feed(part: int) -> None:
        add_files(workdir / "updates", batches[cut[part] : cut[part + 1]], cut[part])
        write_update_files(spark, state_name, workdir, work.lateness_us)
        reader.processAllAvailable()

    def check(times: list[pd.Timestamp]) -> None:
        for t in times:
            got = sorted([r.ad_id, r.campaign] for r in state.as_of(str(t.tz_convert(None))).collect())
            assert got == oracle_as_of(accepted, t), t

    def progress() -> tuple[pd.Timestamp, pd.Timestamp]:
        p = state.progress()

        def utc(t) -> pd.Timestamp:
            t = pd.Timestamp(t)
            return t.tz_convert("UTC") if t.tzinfo else t.tz_localize("UTC")

        return utc(p["update"]), utc(p["fetch"])

    try:
        feed(0)
        u1, _ = progress()
        feed(1)
        u2, f2 = progress()
        assert state.progress()["pairs_compacted"] > 0, (
            "compaction must have dropped versions for this test to mean anything"
        )
        assert f2 > u1
        early = [u1 - pd.Timedelta(seconds=s) for s in (1, 45, 120)]
        check(early)  # below F: nothing snapshotted yet, so from the changelog's start

        first = state.snapshot()  # U at it: u2
        assert first["written"] == 2
        feed(2)
        second = state.snapshot()
        assert second["changelog_trimmed"], "retention must have trimmed the changelog"
        u3, f3 = progress()
        assert f3 > u2
        check(
            [u2 + pd.Timedelta(seconds=1), u2 + (f3 - u2) / 2, f3 - pd.Timedelta(seconds=1)]
        )  # from snapshot + changelog
        check([f3 + (u3 - f3) / 2] if u3 > f3 else [])  # in memory
        with pytest.raises(Exception, match="the oldest time available is") as e:
            state.as_of(str(early[0].tz_convert(None))).collect()
        assert state_name in str(e.value)
    finally:
        reader.stop()
