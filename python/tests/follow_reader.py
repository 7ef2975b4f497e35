"""A second Spark application that opens a durable State read-only while another one writes it, and
records what it sees as it follows: python follow_reader.py ROOT STATE WORKDIR [MASTER] (default
local[2]; it/test_cluster_durability.py runs it on local-cluster, where the driver holds the
read-only State and its executors' tasks reach it over RPC).

Writes WORKDIR/reader-ready once the State is open, then every half second its U and as_of answers
at times below U, until WORKDIR/writer-done (holding the writer's final U) says the writer is done
and this State has caught up to it; then tries to write, and writes WORKDIR/follow.json."""

from __future__ import annotations

import json
import sys
import time
from datetime import datetime
from pathlib import Path

import pandas as pd

import sharedstate as ss


def main(root: str, name: str, workdir: Path, master: str = "local[2]") -> None:
    spark = ss.session(
        "follow-reader",
        master=master,
        **{
            "spark.sharedstate.root": root,
            "spark.sql.shuffle.partitions": "2",
            "spark.sql.session.timeZone": "UTC",
            "spark.sharedstate.follow.interval": "500 milliseconds",
        },
    )
    try:
        state = ss.State.get(spark, name, read_only=True)
        (workdir / "reader-ready").write_text("ready")
        seen = []
        deadline = time.monotonic() + 600
        while time.monotonic() < deadline:
            u = state.progress()["update"]
            u = None if u is None else pd.Timestamp(u)
            if u is not None:
                top = u.tz_convert("UTC").tz_localize(None) if u.tzinfo else u
                probes = [str(top - pd.Timedelta(microseconds=1)), str(top - pd.Timedelta(seconds=90))]
                seen.append(
                    {
                        "update": str(u),
                        "as_of": {t: sorted([r.ad_id, r.campaign] for r in state.as_of(t).collect()) for t in probes},
                    }
                )
            done = workdir / "writer-done"
            if done.exists() and u is not None and u >= pd.Timestamp(done.read_text()):
                break
            time.sleep(0.5)
        errors = {}
        try:
            (
                spark.createDataFrame(
                    [("ad000", datetime(2020, 1, 1), "x")], "ad_id STRING, ts TIMESTAMP, campaign STRING"
                )
                .write.format("sharedstate")
                .mode("append")
                .option("state", name)
                .option("key", "ad_id")
                .option("time", "ts")
                .save()
            )
        except Exception as e:  # noqa: BLE001 - the message is what the test checks
            errors["write"] = str(e)
        try:
            state.snapshot()
        except Exception as e:  # noqa: BLE001
            errors["snapshot"] = str(e)
        late = [[r.key.ad_id, str(r.time), r.reason] for r in state.late_updates().collect()]
        (workdir / "follow.json").write_text(
            json.dumps(
                {
                    "read_only": state.read_only,
                    "seen": seen,
                    "errors": errors,
                    "late": late,
                    "app_id": spark.sparkContext.applicationId,
                    "hosts": state.hosts,
                }
            )
        )
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], Path(sys.argv[3]), *sys.argv[4:5])
