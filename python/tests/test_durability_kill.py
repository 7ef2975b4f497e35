"""kill -9 of the driver mid-stream, then a restart from the same checkpoints and State root: the
final State and the fetch-join output equal the oracle, nothing lost and nothing duplicated."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from sharedstate.testing.adcamp import accepted_updates, comparable, expected_late, make_workload, oracle, write_batches

APP = Path(__file__).with_name("durable_stream_app.py")


def committed_epochs(workdir: Path, name: str) -> int:
    log = workdir / "root" / name / "changelog" / "_delta_log"
    return len(list(log.glob("*.json"))) if log.is_dir() else 0


def output_batches(workdir: Path) -> int:
    meta = workdir / "out" / "_spark_metadata"
    return len([p for p in meta.iterdir() if p.name.isdigit()]) if meta.is_dir() else 0


def snapshot_commits(workdir: Path, name: str) -> int:
    log = workdir / "root" / name / "snapshots" / "_delta_log"
    return len(list(log.glob("*.json"))) if log.is_dir() else 0


@pytest.mark.slow
@pytest.mark.parametrize("rounds_on_change", [False, True], ids=["no-rounds", "rounds-running"])
def test_kill_9_of_the_driver_mid_stream_then_restart_equals_the_oracle(workdir, monkeypatch, rounds_on_change):
    """rounds-running: a snapshot round starts after every commit that applied an update
    (spark.sharedstate.snapshot.afterUpdates = 1), so rounds run back to back in the background and
    the kill lands in or between them; the restart recovers from what they stored and the changelog."""
    name = "killed"
    if rounds_on_change:
        monkeypatch.setenv("DURABLE_APP_CONF", json.dumps({"spark.sharedstate.snapshot.afterUpdates": "1"}))
    work = make_workload(seed=99, keys=15, changes_per_key=8, events=500, late_fraction=0.1)
    write_batches(workdir / "updates", work.update_batches)
    write_batches(workdir / "events", work.event_batches)
    accepted = accepted_updates(work)
    expected = oracle(work.events, accepted, time_column="value_time")
    final_u_floor = pd.Timestamp(accepted["ts"].max())
    probes = [str(t.tz_convert(None)) for t in (pd.Timestamp(s, unit="s", tz="UTC") for s in (60, 300, 599))]
    args = [sys.executable, str(APP), str(workdir), name, str(len(expected)), json.dumps(probes)]

    first = subprocess.Popen(args)
    try:
        deadline = time.monotonic() + 300
        # Mid-stream: several epochs durable and some fetch-join output, but far from the end.
        while not (committed_epochs(workdir, name) >= 6 and output_batches(workdir) >= 2):
            assert first.poll() is None, "the application ended before it could be killed"
            assert time.monotonic() < deadline, "no progress before the kill"
            time.sleep(0.2)
        if rounds_on_change:  # the first application stored rounds before it was killed
            while snapshot_commits(workdir, name) < 3:
                assert first.poll() is None, "the application ended before it could be killed"
                assert time.monotonic() < deadline, "no snapshot round before the kill"
                time.sleep(0.2)
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == -signal.SIGKILL
    assert not (workdir / "final.json").exists()
    epochs_at_kill = committed_epochs(workdir, name)
    assert epochs_at_kill < len(work.update_batches), "the kill came after the updates were all committed"

    subprocess.run(args, check=True, timeout=600)
    final = json.loads((workdir / "final.json").read_text())

    got = pd.read_parquet(workdir / "joined.parquet")
    assert got["event_id"].is_unique, "an event was emitted twice"
    assert len(got) == len(work.events)
    time_col = [c for c in got.columns if c.endswith("_time")][0]
    got = got.rename(columns={time_col: "value_time"})

    pd.testing.assert_frame_equal(comparable(got), comparable(expected), check_dtype=False)
    assert final["updates_rejected"] == len(expected_late(work)) > 0
    for t in probes:
        upto = accepted[accepted["ts"] <= pd.Timestamp(t, tz="UTC")].sort_values("ts").groupby("ad_id").tail(1)
        assert final["as_of"][t] == sorted([a, c] for a, c in zip(upto["ad_id"], upto["campaign"])), t
    assert pd.Timestamp(final["update"]) >= final_u_floor - pd.Timedelta(seconds=20)
