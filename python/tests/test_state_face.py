"""The Python State is a thin face over the Scala StateHandle: every call goes to the handle it
holds, so the two agree on definitions, placement, reads and fetch joins."""

from __future__ import annotations

import pandas as pd
import pytest

import sharedstate as ss


def _load(spark, state_name, rows):
    (
        spark.createDataFrame(pd.DataFrame(rows, columns=["ad_id", "ts", "campaign"]))
        .selectExpr("ad_id", "CAST(ts AS TIMESTAMP) AS ts", "campaign")
        .write.format("sharedstate")
        .option("state", state_name)
        .option("key", "ad_id")
        .option("time", "ts")
        .mode("append")
        .save()
    )


def test_the_face_reads_the_handle(spark, state_name):
    state = ss.State.create(
        spark, state_name, key="ad_id STRING", value="campaign STRING", rule="REPLACE", partitions=3
    )
    assert (state.name, state.key_schema, state.value_schema, state.rule, state.partitions) == (
        state_name,
        "ad_id STRING",
        "campaign STRING",
        "replace",
        3,
    )
    assert state.time_column == f"{state_name}_time" and not state.read_only and state.root is None
    described = state.describe()
    assert described["partitions"] == 3 and described["hosts"] == [] and described["moves"] == []
    assert state_name in ss.State.names(spark)
    assert repr(ss.State.get(spark, state_name)) == repr(state)
    with pytest.raises(ss.SharedStateError, match="read_only applies to durable States"):
        ss.State.get(spark, state_name, read_only=True)


def test_method_and_function_fetch_joins_agree(spark, state_name):
    state = ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING", partitions=2)
    _load(
        spark,
        state_name,
        [("a", "2026-01-01 00:00:10", "c1"), ("a", "2026-01-01 00:00:30", "c2"), ("b", "2026-01-01 00:00:05", "c3")],
    )
    events = spark.createDataFrame(
        [
            (1, "a", "2026-01-01 00:00:20"),
            (2, "a", "2026-01-01 00:00:40"),
            (3, "b", "2026-01-01 00:00:01"),
            (4, "z", "2026-01-01 00:00:50"),
        ],
        "id INT, ad_id STRING, ts STRING",
    ).selectExpr("id", "ad_id", "CAST(ts AS TIMESTAMP) AS ts")
    by_method = state.fetch_join(events, key="ad_id", time="ts").orderBy("id").collect()
    by_function = ss.fetch_join(events, state_name, key=["ad_id"], time="ts").orderBy("id").collect()
    assert by_method == by_function
    assert [(r.id, r.campaign) for r in by_method] == [(1, "c1"), (2, "c2"), (3, None), (4, None)]
    assert sorted((r.ad_id, r.campaign) for r in state.as_of().collect()) == [("a", "c2"), ("b", "c3")]
    assert state.late_updates().count() == 0


def test_a_dropped_state_is_gone_for_every_face(spark, state_name):
    state = ss.State.create(spark, state_name, key="k STRING", value="v STRING")
    assert state.drop()
    with pytest.raises(ss.SharedStateError, match=f"Unknown State '{state_name}'"):
        ss.State.get(spark, state_name)
    with pytest.raises(ss.SharedStateError, match=f"Unknown State '{state_name}'"):
        state.progress()
