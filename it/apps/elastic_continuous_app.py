"""Runs on local-cluster[2,2,1024]: a writer and a continuous-mode change stream run on a State (in
memory or durable) while its partitions move: every partition onto the first executor (State.move:
the second executor's host reader then covers no partition), then spread again (State.rebalance).
The input arrives in chunks between the moves; it/test_cluster_elastic_continuous.py checks the
change stream against the offline oracle.

usage: elastic_continuous_app.py OUT_DIR SEED KIND   (KIND: memory or durable)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pandas as pd

import sharedstate as ss
from app_support import adcamp_writer, advance, cluster_session
from sharedstate.testing.adcamp import accepted_updates, make_workload, write_batches
from sharedstate.testing.streams import check_running, wait_until

out = Path(sys.argv[1])
seed = int(sys.argv[2])
kind = sys.argv[3]
conf = {"spark.sharedstate.root": str(out / "root")} if kind == "durable" else {}
# two cores per executor: the continuous change stream holds one per host reader for its whole life
spark = cluster_session("sharedstate-elastic-continuous-it", master="local-cluster[2,2,1024]", **conf)
records: dict = {"app_id": spark.sparkContext.applicationId}

work = make_workload(seed, keys=40, changes_per_key=8, events=10)
chunks = 3
per = -(-len(work.update_batches) // chunks)
base = time.time() - 10_000


def feed(i: int) -> None:
    write_batches(out / "updates", work.update_batches[i * per : (i + 1) * per], start_mtime=base, first_index=i * per)


feed(0)
state = ss.State.create(spark, "campaigns", key="ad_id STRING", value="campaign STRING", partitions=8)
writer = adcamp_writer(spark, out)
changes = (
    state.changes()
    .writeStream.format("memory")
    .queryName("changes")
    .option("checkpointLocation", str(out / "ck-changes"))
    .trigger(continuous="200 milliseconds")
    .start()
)
queries = (writer, changes)


def healthy() -> None:
    check_running(*queries)


def delivered() -> int:
    return spark.table("changes").count()


wait_until(lambda: (healthy(), delivered() > 0)[1], 600, "a first change")
executors = sorted(set(state.hosts))
records["executors"] = executors
records["host_readers"] = len(executors)

# 1. every partition onto the first executor: the second executor's reader covers nothing now
explicit = []
for p, owner in enumerate(state.hosts):
    if owner != executors[0]:
        explicit += state.move(p, executors[0])
records["explicit_moves"] = explicit
records["hosts_after_moves"] = state.hosts
seen = delivered()
advance(state, feed, 1, queries, until=lambda: delivered() > seen)

# 2. spread again: partitions move back while the readers keep reading
records["rebalance_moves"] = state.rebalance()
records["hosts_after_rebalance"] = state.hosts
seen = delivered()
advance(state, feed, 2, queries, until=lambda: delivered() > seen)

writer.processAllAvailable()
final_u = state.progress()["update"]
records["update"] = str(final_u)

# wait for as many pairs as the oracle has below the final U (the test compares the pairs themselves)
history = accepted_updates(work)
expected = int((pd.to_datetime(history["ts"], utc=True) < pd.Timestamp(final_u)).sum())
wait_until(lambda: (healthy(), delivered() >= expected)[1], 300, f"{expected} changes")
time.sleep(1)  # a pair delivered twice would arrive within the next epochs
for q in queries:
    q.stop()
spark.table("changes").toPandas().to_parquet(out / "changes.parquet")
records["moves"] = state.describe()["moves"]
(out / "records.json").write_text(json.dumps(records, default=str))
spark.stop()
print("ELASTIC-CONTINUOUS-APP-OK")
