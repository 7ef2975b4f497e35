"""Every option of a State is reachable from Python (and Scala): fetch rules, compaction, late policy,
memory limit and the compaction sweep; bad values name the option and what is allowed."""

from __future__ import annotations

import pandas as pd
import pytest

import sharedstate as ss


def _load(spark, state_name, rows):
    (
        spark.createDataFrame(pd.DataFrame(rows, columns=["k", "ts", "v"]))
        .selectExpr("k", "CAST(ts AS TIMESTAMP) AS ts", "v")
        .write.format("sharedstate")
        .option("state", state_name)
        .option("key", "k")
        .option("time", "ts")
        .mode("append")
        .save()
    )


def test_defaults_and_given_options_are_the_states_definition(spark, state_name):
    default = ss.State.create(spark, state_name, key="k STRING", value="v BIGINT")
    d = default.describe()
    assert (d["compaction"], d["late_policy"], d["memory_limit_bytes"], d["sweep_interval_ms"]) == (
        "keep_latest",
        "reject",
        0,
        10_000,
    )
    assert set(d["fetch_rules"]) >= {"latest", "range", "sum", "count"}
    tuned = ss.State.create(
        spark,
        state_name + "_tuned",
        key="k STRING",
        value="v BIGINT",
        fetch_rules=["latest"],
        compaction="NONE",
        late_policy="fail",
        memory_limit="2m",
        sweep_interval="0",
    )
    t = tuned.describe()
    assert (t["fetch_rules"], t["compaction"], t["late_policy"], t["memory_limit_bytes"], t["sweep_interval_ms"]) == (
        ["latest"],
        "none",
        "fail",
        2 * 1024 * 1024,
        0,
    )


@pytest.mark.parametrize(
    ("option", "bad", "says"),
    [
        ("late_policy", "drop", "option 'late_policy' is 'drop'; use one of reject, fail"),
        ("memory_limit", "lots", "option 'memory_limit' is 'lots'"),
        ("sweep_interval", "often", "Option 'sweep_interval': 'often' is not an interval"),
        ("compaction", "newest", "newest"),
        ("fetch_rules", ["nearest"], "nearest"),
    ],
)
def test_bad_options_name_themselves(spark, state_name, option, bad, says):
    with pytest.raises(ss.SharedStateError, match=says):
        ss.State.create(spark, state_name, key="k STRING", value="v BIGINT", **{option: bad})
    assert state_name not in ss.State.names(spark)


def test_fetch_rules_limit_what_joins_may_ask(spark, state_name):
    state = ss.State.create(spark, state_name, key="k STRING", value="v BIGINT", fetch_rules=["latest"])
    _load(spark, state_name, [("a", "2026-01-01 00:00:01", 1)])
    events = spark.createDataFrame([("a", "2026-01-01 00:00:05")], "k STRING, ts STRING").selectExpr(
        "k", "CAST(ts AS TIMESTAMP) AS ts"
    )
    assert [r.v for r in state.fetch_join(events, key="k", time="ts").collect()] == [1]
    with pytest.raises(ss.SharedStateError, match=f"State '{state_name}' does not answer fetch rule 'sum'"):
        state.fetch_join(events, key="k", time="ts", rule="sum", window="1 minute")


def test_memory_limit_refuses_what_would_pass_it(spark, state_name):
    ss.State.create(spark, state_name, key="k STRING", value="v BIGINT", memory_limit="4k")
    rows = [(f"key{i:05d}", f"2026-01-01 00:00:{i % 60:02d}", i) for i in range(2000)]
    with pytest.raises(Exception, match=f"State '{state_name}' would hold .* above its memoryLimitBytes of 4096"):
        _load(spark, state_name, rows)


def test_compaction_none_keeps_every_version(spark, state_name):
    state = ss.State.create(spark, state_name, key="k STRING", value="v BIGINT", compaction="none")
    _load(spark, state_name, [("a", f"2026-01-01 00:00:{s:02d}", s) for s in range(1, 40)])
    # every version stays answerable, however far F and U go
    assert [r.v for r in state.as_of("2026-01-01 00:00:03").collect()] == [3]
    assert state.progress()["pairs_compacted"] == 0 and state.progress()["pairs"] == 39
