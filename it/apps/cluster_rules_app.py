"""Runs on local-cluster[2,1,1024] (two executor JVMs, spark.authenticate on): one writer and five
fetch-join queries on one State at once, on randomised out-of-order AdCamp input with late updates:
read-committed `range`, `sum`, `count` and `avg` over a window, and read-uncommitted `latest` with
a staleness. Records what they produced; it/test_cluster_fetch_rules.py checks it offline.

The update files arrive in two halves; the read-committed joins run from the start, so their
events wait for U. After the first half the writer goes idle with U at U1, and only then the
read-uncommitted join starts: it answers exactly the events with t - staleness < U1, from the
updates below U1, a deterministic snapshot. Then the second half arrives while every join runs,
and all events get answered.

usage: cluster_rules_app.py OUT_DIR SEED
"""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd

import sharedstate as ss
from app_support import cluster_session, finish, key_partitions, save
from sharedstate.testing.adcamp import EVENT_SCHEMA, make_workload, write_batches
from sharedstate.testing.oracles import NUMERIC_UPDATES, numeric  # the input conversion the local tests use
from sharedstate.testing.streams import check_running, drained, wait_until

WINDOW = "90 seconds"
STALENESS = "60 seconds"
AGGREGATES = ("range", "sum", "count", "avg")

out = Path(sys.argv[1])
seed = int(sys.argv[2])
spark = cluster_session("sharedstate-cluster-rules-it", **{"spark.sql.shuffle.partitions": "2"})
records: dict = {"app_id": spark.sparkContext.applicationId}

work = make_workload(seed, events=400)
batches = [numeric(b) for b in work.update_batches]
first_half = len(batches) // 2
records["first_half_files"] = first_half
write_batches(out / "updates", batches[:first_half])
write_batches(out / "events", work.event_batches)
state = ss.State.create(spark, "scores", key="ad_id STRING", value="v BIGINT", partitions=4)
records["hosts"] = state.hosts


def events():
    return spark.readStream.schema(EVENT_SCHEMA).option("maxFilesPerTrigger", 2).parquet(str(out / "events"))


def start_reader(name: str, joined):
    return (
        joined.writeStream.format("memory")
        .queryName(name)
        .outputMode("append")
        .option("checkpointLocation", str(out / f"ck-{name}"))
        .trigger(processingTime="300 milliseconds")
        .start()
    )


readers = {
    rule: start_reader(rule, ss.fetch_join(events(), "scores", key="ad_id", time="ts", rule=rule, window=WINDOW))
    for rule in AGGREGATES
}
writer = (
    spark.readStream.schema(NUMERIC_UPDATES)
    .option("maxFilesPerTrigger", 1)
    .parquet(str(out / "updates"))
    .writeStream.format("sharedstate")
    .option("state", "scores")
    .option("key", "ad_id")
    .option("time", "ts")
    .option("value", "v")
    .option("lateness", "20 seconds")
    .option("checkpointLocation", str(out / "ck-updates"))
    .trigger(processingTime="300 milliseconds")
    .start()
)

# ---- first half: U stops at U1 once the writer has read its files ------------------------------
drained(writer, timeout=300)
# started now, so every event it answers early is answered while U = U1
readers["uncommitted"] = start_reader(
    "uncommitted", ss.fetch_join(events(), "scores", key="ad_id", time="ts", mode="uncommitted", staleness=STALENESS)
)
queries = [writer, *readers.values()]
u1 = state.progress()["update"]
records["u1"] = str(u1)
# the events the join can answer now (t - staleness < U1): arithmetic on the input, not an answer
answerable = int((work.events["ts"] - pd.Timedelta(STALENESS) < pd.Timestamp(u1)).sum())
records["answerable_at_u1"] = answerable


def early_answers_in() -> bool:
    check_running(*queries)
    return spark.table("uncommitted").count() >= answerable


wait_until(early_answers_in, 300, f"{answerable} early read-uncommitted answers", interval=1.0)
drained(readers["uncommitted"], timeout=300)  # every event file read, and U has not moved since
check_running(*queries)
save(out, "uncommitted_early", spark.table("uncommitted").toPandas())
records["u1_after_early"] = str(state.progress()["update"])

# ---- second half, while every join runs --------------------------------------------------------
write_batches(out / "updates", batches[first_half:], first_index=first_half)
records["events"] = len(work.events)


def all_answered() -> bool:
    check_running(*queries)
    return all(spark.table(name).count() >= len(work.events) for name in readers)


wait_until(all_answered, 600, "every event answered by every join", interval=1.0)
for q in queries:
    drained(q, timeout=300)
for name in readers:
    save(out, name, spark.table(name).toPandas())
for q in queries:
    q.stop()
p = state.progress()
records["progress"] = {
    k: (str(v) if k in ("update", "fetch") else v) for k, v in p.items() if k not in ("writers", "readers")
}
save(out, "late", state.late_updates().selectExpr("key.ad_id AS ad_id", "time AS ts", "reason").toPandas())
save(out, "key_partitions", key_partitions(state, "ad_id"))
finish(out, records, "CLUSTER-RULES-APP-OK")
spark.stop()
