"""Runs on local-cluster[2,1,1024] with Spark's executor decommissioning on: a writer, a fetch join
and a change stream run on a State (in memory or durable) while its partitions move: explicitly
(State.move), by State.rebalance(), away from a decommissioned executor (handed over before it
leaves) and onto the executor that replaces it (rebalanced when it registers). The input arrives in
chunks between the moves; it/test_cluster_elastic.py checks the records against the offline oracles.

usage: elastic_app.py OUT_DIR SEED KIND   (KIND: memory or durable)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import sharedstate as ss
from app_support import (
    adcamp_writer,
    advance,
    change_batches_of,
    cluster_session,
    joined_to_parquet,
    record_run,
)
from sharedstate.testing.adcamp import make_workload, write_batches
from sharedstate.testing.streams import check_running, wait_until

out = Path(sys.argv[1])
seed = int(sys.argv[2])
kind = sys.argv[3]
conf = {
    "spark.decommission.enabled": "true",
    # a decommissioned executor lingers this long before it exits (Spark's own test setting); the
    # hand-over does not need it, it makes the test independent of how busy the machine is
    "spark.test.executor.decommission.initial.sleep.millis": "3000",
}
if kind == "durable":
    conf["spark.sharedstate.root"] = str(out / "root")
spark = cluster_session("sharedstate-elastic-it", **conf)
sc = spark.sparkContext
records: dict = {"app_id": sc.applicationId}

work = make_workload(seed, keys=40, changes_per_key=8, events=1500)
chunks = 4
per = -(-len(work.update_batches) // chunks)
ev_per = -(-len(work.event_batches) // chunks)
base = time.time() - 10_000


def feed(i: int) -> None:
    """Chunk i of the input: a few more update and event files for the running queries."""
    write_batches(out / "updates", work.update_batches[i * per : (i + 1) * per], start_mtime=base, first_index=i * per)
    write_batches(
        out / "events", work.event_batches[i * ev_per : (i + 1) * ev_per], start_mtime=base, first_index=i * ev_per
    )


feed(0)
state = ss.State.create(spark, "campaigns", key="ad_id STRING", value="campaign STRING", partitions=8)
records["hosts_at_start"] = state.hosts
writer = adcamp_writer(spark, out)
reader = joined_to_parquet(spark, out)
changes, change_batches = change_batches_of(state, out)
queries = (writer, reader, changes)


def healthy() -> None:
    check_running(*queries)


wait_until(lambda: (healthy(), any(change_batches.values()))[1], 600, "a first change batch")
executors = sorted(set(state.hosts))
records["executors"] = executors

# 1. explicit moves while chunk 0 is processed: every partition onto the first executor
explicit = []
for p, owner in enumerate(state.hosts):
    if owner != executors[0]:
        explicit += state.move(p, executors[0])
records["explicit_moves"] = explicit
records["hosts_after_moves"] = state.hosts
advance(state, feed, 1, queries)

# 2. rebalance while chunk 1 is processed: half of them back
records["rebalance_moves"] = state.rebalance()
records["hosts_after_rebalance"] = state.hosts
advance(state, feed, 2, queries)

# 3. decommission the second executor while chunk 2 is processed: its partitions are handed over
#    before it leaves; the worker then starts a replacement executor, which takes its share back
leaving = executors[1]
info = sc._jvm.org.apache.spark.scheduler.ExecutorDecommissionInfo(
    "sharedstate elastic test", sc._jvm.scala.Option.apply(None)
)
records["decommission_started"] = sc._jsc.sc().schedulerBackend().decommissionExecutor(leaving, info, False, False)


def reason_seen(reason: str):
    return lambda: (healthy(), any(m["reason"] == reason for m in state.describe()["moves"]))[1]


wait_until(reason_seen("decommission"), 120, "the decommissioned executor's hand-over")
records["hosts_after_decommission"] = state.hosts
wait_until(reason_seen("executor added"), 300, "the replacement executor's rebalance")
records["hosts_after_replacement"] = state.hosts
advance(state, feed, 3, queries)


def all_joined() -> bool:
    healthy()
    # through the sink's log: only committed files (pandas would also see files being written)
    return (out / "joined" / "_spark_metadata").is_dir() and spark.read.parquet(str(out / "joined")).count() >= len(
        work.events
    )


wait_until(all_joined, 600, "every event joined")
writer.processAllAvailable()
reader.processAllAvailable()
changes.processAllAvailable()
for q in queries:
    q.stop()
record_run(spark, state, out, records, change_batches)
(out / "records.json").write_text(json.dumps(records, default=str))
spark.stop()
print("ELASTIC-APP-OK")
