"""A Spark application running one TStream application's transactional query over durable States
(root WORKDIR/root), beside its concurrent plain writer where it has one, all checkpointed: the
driver the transactions driver-kill test kills and restarts.

    python txn_kill_app.py WORKDIR APP SEED

The inputs (WORKDIR/in, WORKDIR/plain) are written by the test. The first run creates the States
and loads their initial values with a streaming writer that stops; a restart reopens them from the
root. It runs until the outcome sink holds one outcome per event (or nothing more comes), then
writes WORKDIR/result/: outcomes.parquet (the sink's committed output), <state>.parquet (each
State's final values) and late.json (the plain writer's late updates, the oracle leaves them out).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import sharedstate as ss
from sharedstate.testing.streams import drained, wait_until
from test_transactions_driver_kill import workload
from test_transactions_ledger import _count, _start_transactions, _states


def main(workdir: Path, app: str, seed: int) -> None:
    spark = ss.session(
        "txn-kill-app",
        master="local[3]",
        **{
            "spark.sharedstate.root": str(workdir / "root"),
            "spark.sql.shuffle.partitions": "2",
            "spark.sharedstate.owner.lease": "5 seconds",  # the restart takes the dead driver's root over
        },
    )
    work = workload(app, seed)
    names = {n: f"{app.lower()}_{n}" for n in work.states}
    if (workdir / "loaded").exists():
        # Reopened from the root, with their writers registered as journaled (a pause is not): each
        # initial loader resumes from its checkpoint, finds nothing new and stops, pausing again.
        for name, state in names.items():
            ss.State.get(spark, state)
            if work.initial.get(name):
                key, value = work.states[name]
                loader = (
                    spark.readStream.schema(f"{key}, {value}, ts TIMESTAMP")
                    .parquet(str(workdir / f"initial-{name}"))
                    .writeStream.format("sharedstate")
                    .option("state", state)
                    .option("key", key.split(" ")[0])
                    .option("time", "ts")
                    .option("value", ",".join(c.strip().split(" ")[0] for c in value.split(",")))
                    .option("checkpointLocation", str(workdir / f"ck-initial-{name}"))
                    .trigger(availableNow=True)
                    .start()
                )
                loader.awaitTermination(120)
    else:
        _states(spark, work, f"{app.lower()}", workdir)
        (workdir / "loaded").touch()
    queries = [_start_transactions(spark, work, names, workdir)]
    if work.plain is not None:
        plain = spark.readStream.schema("key STRING, ts TIMESTAMP, balance BIGINT").option("maxFilesPerTrigger", 1)
        queries.append(
            plain.parquet(str(workdir / "plain"))
            .writeStream.format("sharedstate")
            .option("state", names[work.plain_state])
            .option("key", "key")
            .option("time", "ts")
            .option("value", "balance")
            .option("lateness", f"{work.lateness_s} seconds")
            .option("checkpointLocation", str(workdir / "ck-plain"))
            .trigger(processingTime="200 milliseconds")
            .start()
        )
    expected = len(work.events) - 1  # every event but the sentinel
    try:
        wait_until(lambda: _count(spark, workdir / "out") >= expected, timeout=180, what=f"{expected} outcomes")
    except AssertionError:
        pass  # the test compares what there is
    for q in queries:
        drained(q)
    result = workdir / "result"
    result.mkdir(exist_ok=True)
    spark.read.parquet(str(workdir / "out")).toPandas().to_parquet(result / "outcomes.parquet")
    for name, state in names.items():
        ss.State.get(spark, state).as_of().toPandas().to_parquet(result / f"{name}.parquet")
    late = []
    if work.plain is not None:
        rows = ss.State.get(spark, names[work.plain_state]).late_updates().collect()
        late = [[r["key"]["id"], r["time"].isoformat()] for r in rows if r["reason"] == "late"]
    (result / "late.json").write_text(json.dumps(late))
    for q in queries:
        q.stop()
    spark.stop()


if __name__ == "__main__":
    main(Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]))
