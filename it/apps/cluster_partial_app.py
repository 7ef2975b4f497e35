"""Runs on local-cluster[2,1,1024] (two executor JVMs, spark.authenticate on): the online-learning
application of python/tests/test_partial_learning.py on a partial State whose partitions are spread
over both executors. The trainer's two tasks each add their SGD steps to their own instance; events
are scored with the merged model (read-committed fetch join, streaming) and, in a batch join, with
each instance (scope local, every event in each of the two partitions). Records what they produced;
it/test_cluster_partial.py checks it against the sequential oracle.

With `kill`, the State is durable (a root under OUT_DIR) and the application kills (SIGKILL) the
executor JVM hosting State partition 0 once the trainer has committed a few micro-batches: Spark
retries the lost tasks, the State's partitions are rebuilt on a live executor from the changelog,
and both streams go on.

usage: cluster_partial_app.py OUT_DIR SEED [kill]
"""

from __future__ import annotations

import os
import signal
import sys
from pathlib import Path

from pyspark.sql import functions as F

import sharedstate as ss
from app_support import cluster_session, finish, key_partitions, save
from sharedstate.testing.adcamp import write_batches
from sharedstate.testing.learning import EVENT_SCHEMA, EXAMPLE_SCHEMA, LR, make_learning
from sharedstate.testing.processes import executor_pid
from sharedstate.testing.streams import check_running, drained, wait_until

TASKS = 2
out = Path(sys.argv[1])
seed = int(sys.argv[2])
kill = sys.argv[3:] == ["kill"]
durable = {"spark.sharedstate.root": str(out / "root"), "spark.sharedstate.snapshot.interval": "0"} if kill else {}
spark = cluster_session("sharedstate-cluster-partial-it", **{"spark.sql.shuffle.partitions": "2", **durable})
records: dict = {"app_id": spark.sparkContext.applicationId}

work = make_learning(seed, models=6)
write_batches(out / "ex", work.example_batches)
write_batches(out / "ev", work.event_batches)
model = ss.State.create(
    spark, "model", key="model STRING", value="w ARRAY<DOUBLE>", rule="sum", partial="sum", partitions=2
)
records["hosts"] = model.hosts

examples = spark.readStream.schema(EXAMPLE_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(out / "ex"))
step = F.expr(f"transform(x, v -> v * y * {LR}D)").alias("w")
steps = examples.repartition(TASKS, "ex_id").select("model", "ts", step)
trainer = (
    steps.writeStream.format("sharedstate")
    .option("state", "model")
    .option("key", "model")
    .option("time", "ts")
    .option("lateness", f"{work.lateness_s} seconds")
    .option("checkpointLocation", str(out / "ck-train"))
    .trigger(processingTime="300 milliseconds")
    .start()
)
events = spark.readStream.schema(EVENT_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(out / "ev"))
scorer = (
    ss.fetch_join(events, "model", key="model", time="ts")
    .writeStream.format("memory")
    .queryName("scored")
    .option("checkpointLocation", str(out / "ck-score"))
    .trigger(processingTime="300 milliseconds")
    .start()
)


def all_scored() -> bool:
    check_running(trainer, scorer)
    return spark.table("scored").count() >= len(work.events)


if kill:

    def trained_a_few() -> bool:
        check_running(trainer, scorer)
        return trainer.lastProgress is not None and trainer.lastProgress["batchId"] >= 3

    wait_until(trained_a_few, 600, "three trainer micro-batches", interval=0.2)
    victim = records["hosts"][0]
    os.kill(executor_pid(records["app_id"], victim), signal.SIGKILL)
    records["killed"] = {
        "executor": victim,
        "trainer_batch": trainer.lastProgress["batchId"],
        "trainer_batches": len(work.example_batches),
        "scored": spark.table("scored").count(),
    }
wait_until(all_scored, 900, "every event scored", interval=1.0)
drained(scorer, timeout=300)
drained(trainer, timeout=300)
save(out, "scored", spark.table("scored").select("ev_id", "w").toPandas())
trainer.stop()
scorer.stop()

rows = [(int(e.ev_id), e.model, e.ts.to_pydatetime()) for e in work.events.itertuples()]
tagged = (
    spark.sparkContext.parallelize(range(TASKS), TASKS)
    .flatMap(lambda i: [(ev, m, ts, i) for ev, m, ts in rows])
    .toDF("ev_id BIGINT, model STRING, ts TIMESTAMP, part INT")
)
local = model.fetch_join(tagged, key="model", time="ts", scope="local").select("ev_id", "part", "w")
save(out, "local", local.toPandas())
save(out, "key_partitions", key_partitions(model, "model"))
records["updates_rejected"] = model.progress()["updates_rejected"]
records["described"] = model.describe()
finish(out, records, "CLUSTER-PARTIAL-APP-OK")
spark.stop()
