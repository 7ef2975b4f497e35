"""A separate Spark application that opens a durable State from its root and prints what it holds.

Run by the durability tests as a subprocess: python durable_reader.py ROOT STATE PROBES_JSON OUT_JSON.
"""

from __future__ import annotations

import json
import sys

import sharedstate as ss


def main(root: str, name: str, probes: list[str], out: str) -> None:
    spark = ss.session(
        "durable-reader", master="local[2]", **{"spark.sharedstate.root": root, "spark.sql.shuffle.partitions": "2"}
    )
    try:
        state = ss.State.get(spark, name)
        progress = state.progress()
        result = {
            "as_of": {t: sorted([r.ad_id, r.campaign] for r in state.as_of(t).collect()) for t in probes},
            "update": str(progress["update"]),
            "updates_rejected": progress["updates_rejected"],
            "late": sorted(
                (
                    [
                        r.key.ad_id if r.key is not None else None,
                        None if r.time is None else str(r.time),
                        r.reason,
                        r.epoch,
                    ]
                    for r in state.late_updates().collect()
                ),
                key=json.dumps,
            ),
            "read_only": state.read_only,
        }
        with open(out, "w") as f:
            json.dump(result, f)
    finally:
        spark.stop()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4])
