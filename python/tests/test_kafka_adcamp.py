"""AdCamp with Kafka in and out (sharedstate.demos.adcamp_kafka) on a local broker: updates from one
topic into a State, views from another fetch-joined and written to a third topic or to Delta,
checked row by row against the offline as-of join (pandas.merge_asof) over the whole update
history, on randomised out-of-order input; and what a restart from the checkpoints mid-stream
does to each sink: nothing duplicated in Delta (exactly-once), nothing lost in Kafka
(at-least-once, duplicates counted)."""

from __future__ import annotations

import json
import time

import pandas as pd
import pytest

import sharedstate as ss
from sharedstate.demos import adcamp_kafka as demo
from sharedstate.testing.adcamp import Workload, comparable, make_workload, oracle
from sharedstate.testing.streams import check_running, drained, wait_until

pytestmark = [
    pytest.mark.slow,
    # kafka-python 3.0 loads its protocol schemas with importlib.resources' legacy calls
    pytest.mark.filterwarnings("ignore:(read|open)_text is deprecated:DeprecationWarning"),
]

WINDOW_S, LATENESS_S = 60, 20


class Run:
    """One AdCamp run on its own topics, State and checkpoints; queries restartable from those."""

    def __init__(self, spark, kafka, workdir, state_name, seed: int, sink: str):
        self.spark, self.kafka, self.workdir, self.sink = spark, kafka, workdir, sink
        # late_fraction=0: whatever rows Spark's micro-batches take from the topics, no update is
        # late under demo.lateness_for, so the oracle is the as-of join over every update
        self.work = make_workload(seed, window_s=WINDOW_S, lateness_s=LATENESS_S, late_fraction=0.0)
        self.topics = {k: f"{state_name}-{k}" for k in ("updates", "views", "enriched")}
        for topic in self.topics.values():
            kafka.create_topic(topic, partitions=2)
        self.state = ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=4)
        self.queries = []

    def feed(self, work: Workload, pace_s: float):
        return demo.feed(self.kafka.produce, work, pace_s, self.topics["updates"], self.topics["views"])

    def start(self) -> None:
        """Both queries, on the same checkpoints each time (a restart resumes from them)."""
        bootstrap = self.kafka.bootstrap
        updates = demo.read_updates(self.spark, bootstrap, self.topics["updates"])
        writer = demo.write_updates(
            updates, self.state, self.workdir / "ck-updates", demo.lateness_for(LATENESS_S, WINDOW_S)
        )
        enriched = demo.enrich(demo.read_views(self.spark, bootstrap, self.topics["views"]), self.state)
        if self.sink == "kafka":
            reader = demo.write_enriched_to_kafka(
                enriched, self.state, bootstrap, self.topics["enriched"], self.workdir / "ck-views"
            )
        else:
            reader = demo.write_enriched_to_delta(
                enriched, self.state, self.workdir / "enriched", self.workdir / "ck-views"
            )
        self.queries = [writer, reader]

    def stop(self) -> None:
        for q in self.queries:
            q.stop()

    def output(self) -> pd.DataFrame:
        """Every output row (duplicates included), the State's time column as `value_time`."""
        if self.sink == "kafka":
            return demo.enriched_from_kafka(self.spark, self.kafka.bootstrap, self.topics["enriched"])
        delta = self.workdir / "enriched"
        if not any((delta / "_delta_log").glob("*.json")):  # no commit yet (the log directory comes first)
            return pd.DataFrame(columns=["event_id"])
        frame = self.spark.read.format("delta").load(str(delta)).toPandas()
        return frame.rename(columns={self.state.time_column: "value_time"})

    def distinct_output(self) -> int:
        """Views written so far: distinct keys of the topic; for Delta, the rows its commits report
        (no Spark job while the queries run; a duplicate would fail the final row count)."""
        if self.sink == "kafka":
            return self.output()["event_id"].nunique()
        rows = 0
        for commit in (self.workdir / "enriched" / "_delta_log").glob("*.json"):
            for line in commit.read_text().splitlines():
                info = json.loads(line).get("commitInfo")
                if info:
                    rows += int(info.get("operationMetrics", {}).get("numOutputRows", 0))
        return rows

    def wait_for(self, n: int, what: str) -> None:
        def reached() -> bool:
            check_running(*self.queries)
            return self.distinct_output() >= n

        wait_until(reached, timeout=300, what=what, interval=2)

    def finish(self, feeders) -> pd.DataFrame:
        for t in feeders:
            t.join(120)
            assert t.error is None, f"producing the input failed: {t.error}"
        self.wait_for(len(self.work.events), f"all {len(self.work.events)} views enriched")
        for q in self.queries:
            drained(q)
        self.stop()
        return self.output()

    def check_state_took_each_update_once(self) -> None:
        """Applied plus still waiting (above U) is every update, none late: a batch of updates that
        ran again after a restart was not applied twice."""
        p = self.state.progress()
        assert p["updates_rejected"] == 0, "no update is late under this lateness"
        assert p["updates_applied"] + p["updates_waiting"] == len(self.work.updates)

    def expected(self) -> pd.DataFrame:
        return comparable(oracle(self.work.events, self.work.updates, time_column="value_time"), "value_time")


@pytest.mark.parametrize("seed", [5, 2027])
def test_kafka_in_and_out_equals_offline_asof_join(spark, kafka, workdir, state_name, seed):
    run = Run(spark, kafka, workdir, state_name, seed, sink="kafka")
    feeders = run.feed(run.work, pace_s=0.2)
    run.start()
    got = run.finish(feeders)
    assert got["event_id"].is_unique, "without a failure, no view is written twice"
    pd.testing.assert_frame_equal(comparable(got, "value_time"), run.expected(), check_dtype=False)
    # the input really was out of order and some views had no campaign; no update was late
    ts = pd.to_datetime(run.work.updates["ts"], utc=True)
    assert (ts.diff().dropna() < pd.Timedelta(0)).any()
    assert run.expected()["campaign"].isna().any()
    run.check_state_took_each_update_once()


def _restart_mid_stream(run: Run) -> list:
    """Feeds a third of the input and waits for the first output; then, while the rest is being
    produced and processed, stops both queries and starts them again from their checkpoints.
    Returns the threads still feeding."""
    work = run.work
    third_u, third_v = len(work.update_batches) // 3, len(work.event_batches) // 3
    head = Workload(work.update_batches[:third_u], work.event_batches[:third_v], work.lateness_us)
    tail = Workload(work.update_batches[third_u:], work.event_batches[third_v:], work.lateness_us)
    for t in run.feed(head, pace_s=0):
        t.join(60)
    run.start()
    run.wait_for(1, "the first enriched views")
    feeders = run.feed(tail, pace_s=0.3)
    time.sleep(1.0)  # the queries are taking the new input in
    run.stop()
    before = run.distinct_output()
    assert 0 < before < len(work.events), "the restart should come mid-stream"
    run.start()
    return feeders


def test_restart_mid_stream_writes_each_view_once_into_delta(spark, kafka, workdir, state_name):
    run = Run(spark, kafka, workdir, state_name, seed=31, sink="delta")
    got = run.finish(_restart_mid_stream(run))
    assert len(got) == len(run.work.events), f"{len(got) - got['event_id'].nunique()} duplicate rows in Delta"
    run.check_state_took_each_update_once()
    assert got["event_id"].is_unique
    pd.testing.assert_frame_equal(comparable(got, "value_time"), run.expected(), check_dtype=False)


def test_restart_mid_stream_loses_no_view_in_kafka(spark, kafka, workdir, state_name):
    run = Run(spark, kafka, workdir, state_name, seed=47, sink="kafka")
    got = run.finish(_restart_mid_stream(run))
    duplicates = len(got) - got["event_id"].nunique()
    print(f"at-least-once into Kafka: {len(got)} records for {len(run.work.events)} views, {duplicates} duplicates")
    # every copy of a view carries the same answer (read-committed answers never change) ...
    per_view = comparable(got, "value_time").groupby("event_id").nunique(dropna=False)
    assert (per_view <= 1).all().all(), "two copies of one view differ"
    # ... and every view is there, with the answer of the offline as-of join
    once = comparable(got.drop_duplicates("event_id"), "value_time")
    pd.testing.assert_frame_equal(once, run.expected(), check_dtype=False)
    run.check_state_took_each_update_once()
