"""Partial States on the online-learning application (docs/partial-state.md): a stream of labelled
examples trains a linear model by SGD steps, each writer partition adding its steps to its own
instance of a partial `sum` State (an ARRAY<DOUBLE> weight vector); a second stream scores events
with the merged model as of each event's time. Both arrive out of order. Checked event by event
against a sequential offline replay of the steps (ModelOracle): read-committed (BSP) answers equal
it exactly, whatever the number of writer partitions; bounded-staleness (SSP) answers are the model
as of a time within the staleness; a restart on the durable root gives the same answers."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pandas as pd
import pytest
from pyspark.sql import functions as F

import sharedstate as ss
from sharedstate.errors import SharedStateError
from sharedstate.testing.adcamp import write_batches
from sharedstate.testing.learning import (
    EVENT_SCHEMA,
    EXAMPLE_SCHEMA,
    LR,
    ModelOracle,
    make_learning,
)
from sharedstate.testing.streams import check_running, drained, wait_until


def create_model(spark, name: str, **kw) -> ss.State:
    return ss.State.create(
        spark, name, key="model STRING", value="w ARRAY<DOUBLE>", rule="sum", partial="sum", partitions=2, **kw
    )


def start_trainer(spark, name: str, workdir, partitions: int, lateness_s: int):
    """Each task of the writer takes its examples' SGD steps into its own instance (instances='task')."""
    examples = spark.readStream.schema(EXAMPLE_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(workdir / "ex"))
    steps = examples.repartition(partitions, "ex_id").select(
        "model", "ts", F.expr(f"transform(x, v -> v * y * {LR}D)").alias("w")
    )
    return (
        steps.writeStream.format("sharedstate")
        .option("state", name)
        .option("key", "model")
        .option("time", "ts")
        .option("lateness", f"{lateness_s} seconds")
        .option("checkpointLocation", str(workdir / "ck-train"))
        .trigger(processingTime="300 milliseconds")
        .start()
    )


def start_scorer(spark, name: str, workdir, **join):
    events = spark.readStream.schema(EVENT_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(workdir / "ev"))
    scored = ss.fetch_join(events, name, key="model", time="ts", **join)
    return (
        scored.writeStream.format("memory")
        .queryName(f"scored_{name}")
        .outputMode("append")
        .option("checkpointLocation", str(workdir / "ck-score"))
        .trigger(processingTime="300 milliseconds")
        .start()
    )


def run(spark, name: str, workdir, work, partitions: int, **join) -> pd.DataFrame:
    write_batches(workdir / "ex", work.example_batches)
    write_batches(workdir / "ev", work.event_batches)
    trainer = start_trainer(spark, name, workdir, partitions, work.lateness_s)
    scorer = start_scorer(spark, name, workdir, **join)
    n = len(work.events)

    def done() -> bool:
        check_running(trainer, scorer)
        return spark.table(f"scored_{name}").count() >= n

    wait_until(done, timeout=300, what=f"{n} scored events")
    drained(scorer)
    got = spark.table(f"scored_{name}").toPandas()
    trainer.stop()
    scorer.stop()
    return got


def arrives_after_events(work) -> bool:
    for i, batch in enumerate(work.example_batches):
        for events in work.event_batches[:i]:
            if len(events) and events["ts"].max() >= batch["ts"].min():
                return True
    return False


def weights(got: pd.DataFrame) -> dict[int, list[float] | None]:
    return {int(i): (None if w is None else [float(x) for x in w]) for i, w in zip(got["ev_id"], got["w"])}


@pytest.mark.parametrize("partitions", [1, 3])
def test_read_committed_scores_equal_the_sequential_oracle(spark, workdir, state_name, partitions):
    work = make_learning(seed=5)
    model = create_model(spark, state_name)
    got = run(spark, state_name, workdir, work, partitions)
    oracle = ModelOracle(work.examples)
    assert got["ev_id"].is_unique and len(got) == len(work.events)
    expected = {int(e.ev_id): oracle.weights(e.model, e.ts) for e in work.events.itertuples()}
    assert weights(got) == expected
    # the input was adversarial: steps arrive in later files than events they precede
    assert arrives_after_events(work)
    assert model.progress()["updates_rejected"] == 0
    # one instance per writer partition: the merged model as of the end is the sum of every step
    final = {r.model: list(r.w) for r in model.as_of().collect()}
    assert set(final) == {"m0", "m1"}
    for m in final:
        assert final[m] == oracle.weights(m, work.examples["ts"].max())
    # and by instance: one per writer partition that took steps, summing to the merged model
    by_instance = model.as_of(instances=True).toPandas()
    assert set(by_instance["instance"]) == set(range(partitions))
    for m, part in by_instance.groupby("model"):
        assert [float(x) for x in np.sum([list(w) for w in part["w"]], axis=0)] == final[m]


def test_the_change_stream_and_sql_read_the_merged_model(spark, workdir, state_name):
    work = make_learning(seed=17)
    model = create_model(spark, state_name)
    write_batches(workdir / "ex", work.example_batches)
    trainer = start_trainer(spark, state_name, workdir, 3, work.lateness_s)
    drained(trainer)
    out = f"changes_{state_name}"
    changes = (
        model.changes()
        .writeStream.format("memory")
        .queryName(out)
        .option("checkpointLocation", str(workdir / "ck-changes"))
        .start()
    )
    drained(changes)
    got = spark.table(out).toPandas()
    u = pd.Timestamp(model.progress()["update"])
    oracle = ModelOracle(work.examples)
    final_steps = work.examples[work.examples["ts"] < u]
    # one row per change of the merged model: at each step's time, the model as of that time
    assert len(got) == len(final_steps.drop_duplicates(["model", "ts"]))
    for r in got.itertuples():
        t = pd.Timestamp(getattr(r, model.time_column)).tz_localize("UTC")
        assert [float(x) for x in r.w] == oracle.weights(r.model, t), (r.model, t)
    e = work.events.iloc[0]
    at = e["ts"].tz_convert(None)
    sql = spark.sql(f"SELECT sharedstate_fetch('{state_name}', '{e['model']}', TIMESTAMP '{at}') AS f").collect()
    assert [float(x) for x in sql[0]["f"]["w"]] == oracle.weights(e["model"], e["ts"])


def test_bounded_staleness_scores_are_the_model_within_the_bound(spark, workdir, state_name):
    work = make_learning(seed=9)
    create_model(spark, state_name)
    staleness = pd.Timedelta(seconds=15)
    got = run(spark, state_name, workdir, work, 3, mode="uncommitted", staleness="15 seconds")
    oracle = ModelOracle(work.examples)
    by_id = weights(got)
    assert len(by_id) == len(work.events)
    for e in work.events.itertuples():
        # the model as of some time t' in [t - staleness, t]: at t - staleness or at a step in between
        t = e.ts.tz_convert(None)
        steps = oracle.step_times(e.model)
        between = steps[(steps > np.datetime64(t - staleness)) & (steps <= np.datetime64(t))]
        allowed = [oracle.weights(e.model, e.ts - staleness)] + [
            oracle.weights(e.model, pd.Timestamp(s, tz="UTC")) for s in between
        ]
        assert by_id[int(e.ev_id)] in allowed, (e.ev_id, by_id[int(e.ev_id)], allowed)


def test_local_fetches_read_one_instance_and_sum_to_the_global_one(spark, workdir, state_name):
    work = make_learning(seed=13)
    model = create_model(spark, state_name)
    partitions = 3
    got = run(spark, state_name, workdir, work, partitions)
    # every event in each of 3 partitions, tagged with the partition: partition i reads instance i
    rows = [(int(e.ev_id), e.model, e.ts.to_pydatetime()) for e in work.events.itertuples()]
    tagged = (
        spark.sparkContext.parallelize(range(partitions), partitions)
        .flatMap(lambda i: [(ev, m, ts, i) for ev, m, ts in rows])
        .toDF("ev_id BIGINT, model STRING, ts TIMESTAMP, part INT")
    )
    local = model.fetch_join(tagged, key="model", time="ts", scope="local").toPandas()
    assert len(local) == partitions * len(work.events)
    glob = weights(got)
    for ev, part in local.groupby("ev_id"):
        instances = [list(w) for w in part["w"] if w is not None]
        merged = [float(x) for x in np.sum(instances, axis=0)] if instances else None
        assert merged == glob[int(ev)], ev
    assert local.groupby("part")["w"].apply(lambda s: s.notna().any()).all(), "every instance has steps"


def test_a_restart_on_the_durable_root_gives_the_same_scores(spark, workdir, state_name):
    work = make_learning(seed=21)
    root = str(workdir / "root")
    half = len(work.example_batches) // 2
    create_model(spark, state_name, root=root)
    write_batches(workdir / "ex", work.example_batches[:half])
    first = start_trainer(spark, state_name, workdir, 2, work.lateness_s)
    drained(first)
    first.stop()
    ss.State.get(spark, state_name).drop()  # forgotten here; its tables stay under the root
    model = create_model(spark, state_name, root=root)  # rebuilt from the changelog and snapshots
    write_batches(workdir / "ex", work.example_batches[half:], first_index=half)
    write_batches(workdir / "ev", work.event_batches)
    trainer = start_trainer(spark, state_name, workdir, 2, work.lateness_s)  # resumes from its checkpoint
    scorer = start_scorer(spark, state_name, workdir)

    def done() -> bool:
        check_running(trainer, scorer)
        return spark.table(f"scored_{state_name}").count() >= len(work.events)

    wait_until(done, timeout=300, what="scored events after the restart")
    drained(scorer)
    got = spark.table(f"scored_{state_name}").toPandas()
    oracle = ModelOracle(work.examples)
    assert weights(got) == {int(e.ev_id): oracle.weights(e.model, e.ts) for e in work.events.itertuples()}
    assert model.progress()["updates_rejected"] == 0


def test_bad_partial_definitions_and_scopes_fail_clearly(spark, state_name):
    with pytest.raises(SharedStateError, match=r"State 'bad_merge'.*partial merge 'sum'.*s STRING"):
        ss.State.create(spark, "bad_merge", key="k STRING", value="s STRING", partial="sum")
    with pytest.raises(SharedStateError, match=r"option 'instances' is 'executor'"):
        ss.State.create(spark, "bad_kind", key="k STRING", value="n BIGINT", partial="sum", instances="executor")
    plain = ss.State.create(spark, state_name, key="model STRING", value="w ARRAY<DOUBLE>", rule="sum")
    events = spark.createDataFrame([("m0", datetime(2026, 1, 1))], "model STRING, ts TIMESTAMP")
    with pytest.raises(SharedStateError, match=r"Option 'instances' applies to as-of reads of a partial State"):
        plain.as_of(instances=True).collect()
    with pytest.raises(SharedStateError, match=r"scope 'local'.*is not partial"):
        plain.fetch_join(events, key="model", time="ts", scope="local")
    per_query = ss.State.create(
        spark,
        state_name + "_q",
        key="model STRING",
        value="w ARRAY<DOUBLE>",
        rule="sum",
        partial="sum",
        instances="query",
    )
    with pytest.raises(SharedStateError, match=r"one instance per writer query"):
        per_query.fetch_join(events, key="model", time="ts", scope="local")
    with pytest.raises(SharedStateError, match=r"scope 'sideways' is not supported"):
        per_query.fetch_join(events, key="model", time="ts", scope="sideways")
    merged = ss.State.create(spark, state_name + "_e", key="k STRING", value="n BIGINT", partial="expr:greatest(a, b)")
    assert merged.describe()["partial"] == "expr:greatest(a, b)"
    with pytest.raises(SharedStateError, match=r"Partial merge 'expr:a \|\| b'"):
        ss.State.create(spark, state_name + "_x", key="k STRING", value="n BIGINT", partial="expr:a || b")
