"""kill -9 of one executor JVM of a local-cluster[2,1,1024] application with a durable State, mid-stream:
Spark retries the failed tasks, the State partitions the executor hosted are rebuilt on the live one
from the Delta changelog, and both streams go on. The final State and the fetch-join output (a
Parquet file sink) equal the oracle (pandas merge_asof over the accepted updates): nothing lost,
nothing duplicated. The rejected Delta table (late_updates()) holds every late update exactly once,
also those the killed executor's partitions rejected; as_of below min(F, U) (answered from the Delta
tables) equals the oracle; the owner lease file keeps being renewed (6 s lease) while the
application runs. A second application on local-cluster[1,1,1024] opens the State read-only once
it exists and follows the owner's changelog to its end (python/tests/follow_reader.py). Then a
third application on the same root (a driver restart) rebuilds the State on its executors and
answers the same. The applications run in subprocesses (it/apps/durable_cluster_app.py).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

from sharedstate.testing.adcamp import accepted_updates, comparable, expected_late, make_workload, oracle, write_batches
from sharedstate.testing.processes import executor_pid

ROOT = Path(__file__).resolve().parents[1]
APP = ROOT / "it/apps/durable_cluster_app.py"
READER = ROOT / "python/tests/follow_reader.py"


def committed_epochs(workdir: Path, name: str) -> int:
    log = workdir / "root" / name / "changelog" / "_delta_log"
    return len(list(log.glob("*.json"))) if log.is_dir() else 0


def output_batches(workdir: Path) -> int:
    meta = workdir / "out" / "_spark_metadata"
    return len([p for p in meta.iterdir() if p.name.isdigit()]) if meta.is_dir() else 0


def late_rows(work) -> list[list[str]]:
    late = expected_late(work)
    return sorted([a, pd.Timestamp(t).tz_convert("UTC").isoformat(), "late"] for a, t in zip(late["ad_id"], late["ts"]))


def utc_iso(t: str) -> str:
    ts = pd.Timestamp(t)
    return (ts.tz_convert("UTC") if ts.tzinfo else ts.tz_localize("UTC")).isoformat()


@pytest.mark.slow
def test_kill_9_of_an_executor_mid_stream_moves_its_partitions_and_equals_the_oracle(tmp_path):
    import pyspark

    name = "clustered"
    work = make_workload(seed=77, keys=15, changes_per_key=8, events=500, late_fraction=0.1)
    write_batches(tmp_path / "updates", work.update_batches)
    write_batches(tmp_path / "events", work.event_batches)
    accepted = accepted_updates(work)
    expected = oracle(work.events, accepted, time_column="value_time")
    probes = [str(t.tz_convert(None)) for t in (pd.Timestamp(s, unit="s", tz="UTC") for s in (60, 300, 599))]
    env = {k: v for k, v in os.environ.items() if k != "PYSPARK_SUBMIT_ARGS"}
    env.update(
        SPARK_HOME=str(Path(pyspark.__file__).parent),
        PYSPARK_PYTHON=sys.executable,
        PYSPARK_DRIVER_PYTHON=sys.executable,
        # A cluster application serves States only with spark.authenticate on (the apps set their own
        # secret; this one is for python/tests/follow_reader.py, which takes no conf).
        PYSPARK_SUBMIT_ARGS=f"--conf spark.authenticate=true --conf spark.authenticate.secret={secrets.token_hex(16)} "
        "pyspark-shell",
    )
    app = subprocess.Popen(
        [sys.executable, str(APP), str(tmp_path), name, str(len(expected)), json.dumps(probes)],
        env=env,
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    app_id = None
    reader = None
    try:
        deadline = time.monotonic() + 600
        while not ((tmp_path / "started.json").exists()):
            assert app.poll() is None, "the application ended before creating the State: " + app.stdout.read()[-5000:]
            assert time.monotonic() < deadline, "no State created"
            time.sleep(0.2)
        started = json.loads((tmp_path / "started.json").read_text())
        # A reader application in cluster mode opens the State read-only while the owner goes on.
        reader_log = tmp_path / "reader.log"
        with reader_log.open("w") as log:
            reader = subprocess.Popen(
                [sys.executable, str(READER), str(tmp_path / "root"), name, str(tmp_path), "local-cluster[1,1,1024]"],
                env=env,
                cwd=tmp_path,
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
            )
        while not (committed_epochs(tmp_path, name) >= 6 and output_batches(tmp_path) >= 2):
            assert app.poll() is None, "the application ended before the kill: " + app.stdout.read()[-5000:]
            assert time.monotonic() < deadline, "no progress before the kill"
            time.sleep(0.2)
        app_id, hosts = started["app_id"], started["hosts"]
        assert len(set(hosts)) == 2, f"both executors host partitions: {hosts}"
        victim = hosts[0]
        os.kill(executor_pid(app_id, victim), signal.SIGKILL)
        epochs_at_kill = committed_epochs(tmp_path, name)
        output, _ = app.communicate(timeout=900)
        if app.returncode == 0:  # the reader stops once it has caught up with the owner's final U
            (tmp_path / "writer-done").write_text(json.loads((tmp_path / "final.json").read_text())["update"])
        reader.wait(timeout=600)
    finally:
        for proc in (app, reader):
            if proc is not None and proc.poll() is None:
                proc.kill()
        if app_id:
            shutil.rmtree(Path(env["SPARK_HOME"]) / "work" / app_id, ignore_errors=True)
    assert app.returncode == 0, output[-8000:]
    assert epochs_at_kill < len(work.update_batches), "the kill came after every update was committed"
    final = json.loads((tmp_path / "final.json").read_text())

    # The victim's partitions moved: the owner map no longer names it, and the moves say where to.
    described = final["described"]
    lost = [p for p, h in enumerate(hosts) if h == victim]
    assert victim not in described["hosts"], described
    moved = [p for m in described["moves"] if m["from"] == victim for p in m["partitions"]]
    assert sorted(moved) == lost, described["moves"]
    print("partition moves:", described["moves"])

    got = pd.read_parquet(tmp_path / "joined.parquet")
    assert got["event_id"].is_unique, "an event was emitted twice"
    assert len(got) == len(work.events)
    got = got.rename(columns={[c for c in got.columns if c.endswith("_time")][0]: "value_time"})
    pd.testing.assert_frame_equal(comparable(got), comparable(expected), check_dtype=False)
    assert final["updates_rejected"] == len(expected_late(work)) > 0
    assert final["updates_applied"] == len(accepted[accepted["ts"] < pd.Timestamp(final["update"])])

    def answers_equal_the_oracle(final: dict) -> None:
        for t in probes:
            upto = accepted[accepted["ts"] <= pd.Timestamp(t, tz="UTC")].sort_values("ts").groupby("ad_id").tail(1)
            assert final["as_of"][t] == sorted([a, c] for a, c in zip(upto["ad_id"], upto["campaign"])), t

    answers_equal_the_oracle(final)

    # The read-only reader (cluster mode): it followed the owner to its final U, its answers equal the
    # oracle at every step it saw, it refused to write, and it read the same rejected table.
    assert reader.returncode == 0, reader_log.read_text()[-8000:]
    follow = json.loads((tmp_path / "follow.json").read_text())
    shutil.rmtree(Path(env["SPARK_HOME"]) / "work" / follow["app_id"], ignore_errors=True)
    assert follow["read_only"] and follow["hosts"] == ["driver"] * 4, follow["hosts"]
    assert follow["seen"] and pd.Timestamp(follow["seen"][-1]["update"]) == pd.Timestamp(final["update"])
    for step in follow["seen"]:
        for t, got in step["as_of"].items():
            upto = accepted[accepted["ts"] <= pd.Timestamp(t, tz="UTC")].sort_values("ts").groupby("ad_id").tail(1)
            assert got == sorted([a, c] for a, c in zip(upto["ad_id"], upto["campaign"])), (step["update"], t)
    assert "read-only" in follow["errors"]["write"] and "read-only" in follow["errors"]["snapshot"]
    assert sorted([a, utc_iso(t), r] for a, t, r in follow["late"]) == late_rows(work)
    # How far behind the final U it opened depends on the load (its JVMs start while the owner runs).
    print("reader saw", len(follow["seen"]), "steps, from U =", follow["seen"][0]["update"], "to", final["update"])
    # Time travel: the probes (but maybe the last) are below min(F, U) (the fetch join's lateness
    # took F up), and compaction dropped versions in memory, so the Delta tables answered them (a
    # State rebuilt on the driver), equal to the oracle above.
    assert final["pairs_compacted"] > 0
    horizon = min(
        final["update_micros"],
        final["fetch"]
        if final["fetch_is"] == "finite"
        else (2**63 - 1 if final["fetch_is"] == "+infinity" else -(2**63)),
    )
    below = [t for t in probes if pd.Timestamp(t, tz="UTC").value // 1000 < horizon]
    assert len(below) >= 2, (final["fetch_is"], final["fetch"])  # 60 s and 300 s; 599 s may be above F

    # The rejected table: each late update once (the hosts decide, the driver writes; the killed
    # executor's share of the commit that found it lost comes from the rebuild).
    late = sorted([a, utc_iso(t), r] for a, t, r in final["late"])
    assert late == late_rows(work) and len(late) == final["updates_rejected"]

    # The owner lease: one generation, this application's, renewed past one lease period and live.
    lease = final["lease"]
    assert len(lease["files"]) == 1, lease
    owner = next(iter(lease["files"].values()))
    assert owner["app"] == final["app_id"] and owner["lease_ms"] == 6000 and not owner.get("released")
    assert owner["renewed_ms"] > lease["created_ms"] + owner["lease_ms"], lease
    assert lease["now_ms"] - owner["renewed_ms"] <= owner["lease_ms"], lease

    # The change stream across the kill: each final pair once (host feeds, a scan for the batch after the move).
    changes = pd.read_parquet(tmp_path / "changes.parquet")
    committed = accepted[accepted["ts"] < pd.Timestamp(final["update"])]
    tcol = [c for c in changes.columns if c.endswith("_time")][0]
    assert sorted(zip(changes["ad_id"], changes["campaign"], pd.to_datetime(changes[tcol], utc=True))) == sorted(
        zip(committed["ad_id"], committed["campaign"], pd.to_datetime(committed["ts"], utc=True))
    )
    print("change plans:", final["change_plans"])
    assert final["change_plans"]["host"] > 0

    # A new application on the same root and checkpoints (a driver restart): each executor rebuilds
    # its partitions from the tables; nothing is left to process, and the State answers as before.
    (tmp_path / "final.json").unlink()
    (tmp_path / "started.json").unlink()
    again = subprocess.run(
        [sys.executable, str(APP), str(tmp_path), name, str(len(expected)), json.dumps(probes)],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )
    restarted_id = json.loads((tmp_path / "started.json").read_text())["app_id"]
    shutil.rmtree(Path(env["SPARK_HOME"]) / "work" / restarted_id, ignore_errors=True)
    assert again.returncode == 0, again.stdout[-3000:] + again.stderr[-8000:]
    reopened = json.loads((tmp_path / "final.json").read_text())
    assert len(set(reopened["described"]["hosts"])) == 2 and reopened["described"]["moves"] == []
    assert reopened["update"] == final["update"]
    assert reopened["updates_rejected"] == final["updates_rejected"]
    assert sorted([a, utc_iso(t), r] for a, t, r in reopened["late"]) == late_rows(work), (
        "rejected table after a restart"
    )
    assert len(reopened["lease"]["files"]) == 2, "the restarted application took the next generation"
    answers_equal_the_oracle(reopened)
    assert len(pd.read_parquet(tmp_path / "joined.parquet")) == len(work.events), "no event emitted twice"
