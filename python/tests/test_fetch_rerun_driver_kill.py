"""A fetch-join micro-batch re-run by a NEW driver (the first was killed with SIGKILL after the sink
committed the batch, before Spark's commit log did) answers exactly the events its first attempt
answered, although U moved on before the kill: the batch's bound is kept in the query's checkpoint,
not only in the dead driver's memory."""

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

from sharedstate.testing.adcamp import write_batches

APP = Path(__file__).with_name("rerun_app.py")


def attempts(workdir: Path) -> dict[int, list[list[list]]]:
    found: dict[int, list[list[list]]] = {}
    for f in sorted((workdir / "attempts").glob("*.json"), key=lambda p: tuple(int(x) for x in p.name.split(".")[:2])):
        found.setdefault(int(f.name.split(".")[0]), []).append(json.loads(f.read_text()))
    return found


@pytest.mark.slow
def test_a_batch_rerun_by_a_new_driver_answers_what_its_first_attempt_answered(workdir):
    name = "rerun"
    write_batches(
        workdir / "updates",
        [
            pd.DataFrame(
                {"ad_id": ["a", "z"], "campaign": ["c1", "u25"], "ts": pd.to_datetime([5, 25], unit="s", utc=True)}
            )
        ],
    )
    times = [10, 20, 30, 40, 50, 60]
    write_batches(
        workdir / "events",
        [
            pd.DataFrame(
                {
                    "event_id": range(1, 7),
                    "user_id": "u",
                    "ad_id": "a",
                    "ts": pd.to_datetime(times, unit="s", utc=True),
                    "clicked": False,
                }
            )
        ],
    )
    args = [sys.executable, str(APP), str(workdir), name]

    first = subprocess.Popen(args + ["first"], start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        while not (workdir / "crash-ready").exists():
            assert first.poll() is None, "the first driver ended before it could be killed"
            assert time.monotonic() < deadline, "the first driver never committed a batch"
            time.sleep(0.2)
    finally:
        os.killpg(first.pid, signal.SIGKILL)  # the Python driver and its JVM
        first.wait(timeout=30)
    batch = int((workdir / "crash-ready").read_text())
    assert attempts(workdir)[batch] == [[[1, "c1"], [2, "c1"]]], "U was 25 s: only events before it"

    subprocess.run(args + ["second"], check=True, timeout=300)
    assert (workdir / "second-done").exists()

    seen = attempts(workdir)
    assert len(seen[batch]) == 2, "the new driver ran the killed batch again"
    assert seen[batch][1] == seen[batch][0], "the re-run answers exactly what the first attempt did"
    # An idempotent sink keeps each batch's first attempt: every event once, with the as-of answer.
    kept = sorted(tuple(r) for b in sorted(seen) for r in seen[b][0])
    assert kept == [(1, "c1"), (2, "c1"), (3, "c1"), (4, "c2"), (5, "c2"), (6, "c2")]
