"""AdCamp on the containers' standalone cluster while it grows and shrinks, started by spark-submit
(it/test_containers_elastic.py gives the master, the secret, the packages and Spark's executor
decommissioning; this file sets nothing the command line sets).

A writer, a fetch join and a change stream run on a State (in memory or durable, on the directory
every container shares). The input arrives in chunks, each once the cluster has changed:

0. two executors host the State; the application writes OUT/steady.json once the queries run;
1. the test starts a third worker: its executor joins and the State is rebalanced onto it (reason
   `executor added`); the application records it in OUT/added.json and feeds chunk 1;
2. the test tells one of the first two workers to decommission (SIGPWR): its executor hands its
   partitions over before it leaves (reason `decommission`); the application records it in
   OUT/decommissioned.json and feeds chunks 2 and 3;

then, every event joined and the queries drained, OUT/joined.parquet, OUT/changes.parquet and
OUT/records.json for the test's oracles.

usage: containers_elastic_app.py OUT_DIR SEED KIND   (KIND: memory or durable)
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from pyspark.sql import SparkSession

import sharedstate as ss
from app_support import adcamp_writer, advance, change_batches_of, joined_to_parquet, record_run
from sharedstate.testing.adcamp import make_workload, write_batches
from sharedstate.testing.streams import check_running, wait_until

out = Path(sys.argv[1])
seed = int(sys.argv[2])
kind = sys.argv[3]
spark = SparkSession.builder.appName(f"containers-elastic-{kind}").getOrCreate()
records: dict = {"app_id": spark.sparkContext.applicationId}

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


def write_json(name: str, value: dict) -> None:
    """Whole or not at all: the test polls for the file."""
    (out / f"{name}.tmp").write_text(json.dumps(value, default=str))
    (out / f"{name}.tmp").rename(out / name)


feed(0)
state = ss.State.create(spark, "campaigns", key="ad_id STRING", value="campaign STRING", partitions=8)
records["hosts_at_start"] = state.hosts
writer = adcamp_writer(spark, out)
reader = joined_to_parquet(spark, out)
changes, change_batches = change_batches_of(state, out)
queries = (writer, reader, changes)


def healthy() -> None:
    check_running(*queries)


def spread_over(executors: int):
    """The State's rebalance is over: a move of `reason` happened and every partition sits on one of
    `executors` executors, their counts at most one apart (a rebalance moves one group at a time)."""

    def done() -> bool:
        healthy()
        hosts = state.hosts
        counts = [hosts.count(h) for h in set(hosts)]
        return len(counts) == executors and max(counts) - min(counts) <= 1

    return done


def reason_seen(reason: str):
    return lambda: (healthy(), any(m["reason"] == reason for m in state.describe()["moves"]))[1]


wait_until(lambda: (healthy(), any(change_batches.values()))[1], 600, "a first change batch")
records["executors"] = sorted(set(state.hosts))
write_json("steady.json", {"app_id": records["app_id"], "hosts": state.hosts})

# 1. the test starts a worker: its executor registers and the State is rebalanced onto it
wait_until(reason_seen("executor added"), 600, "the new executor's rebalance")
wait_until(spread_over(3), 300, "the State spread over three executors")
records["hosts_after_added"] = state.hosts
write_json("added.json", {"hosts": state.hosts})
advance(state, feed, 1, queries)

# 2. the test decommissions a worker: its executor hands its partitions over before it leaves
wait_until(reason_seen("decommission"), 600, "the decommissioned executor's hand-over")
wait_until(spread_over(2), 300, "the State spread over the two executors left")
records["hosts_after_decommission"] = state.hosts
write_json("decommissioned.json", {"hosts": state.hosts})
advance(state, feed, 2, queries)
feed(3)


def all_joined() -> bool:
    healthy()
    # through the sink's log: only committed files (pandas would also see files being written)
    return (out / "joined" / "_spark_metadata").is_dir() and spark.read.parquet(str(out / "joined")).count() >= len(
        work.events
    )


wait_until(all_joined, 600, "every event joined")
for q in queries:
    q.processAllAvailable()
for q in queries:
    q.stop()
record_run(spark, state, out, records, change_batches)
write_json("records.json", records)
spark.stop()
print("CONTAINERS-ELASTIC-APP-OK")
