"""Bad input fails at query start (or at the call) with a message that names the problem."""

from __future__ import annotations

import pandas as pd
import pytest

import sharedstate as ss
from sharedstate.testing.adcamp import UPDATE_SCHEMA, write_batches
from sharedstate.testing.streams import wait_until


@pytest.fixture
def updates(spark, workdir):
    (workdir / "in").mkdir()
    return spark.readStream.schema(UPDATE_SCHEMA).parquet(str(workdir / "in"))


def _writer(df, workdir, **options):
    w = df.writeStream.format("sharedstate").option("checkpointLocation", str(workdir / "ck"))
    for k, v in options.items():
        w = w.option(k, v)
    return w


def _fails_at_start(writer, message: str):
    """start() itself raises: the plugin's analyzer check validates the write against the input."""
    with pytest.raises(Exception, match=message):
        writer.start()


def test_unknown_state_fails_when_the_query_starts(spark, updates, workdir):
    with pytest.raises(Exception, match="Unknown State 'no_such_state'"):
        _writer(updates, workdir, state="no_such_state", key="ad_id", time="ts").start()


def test_missing_key_option(spark, updates, workdir, state_name):
    ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING")
    _fails_at_start(_writer(updates, workdir, state=state_name, time="ts"), "Option 'key' is required")


def test_missing_time_option(spark, updates, workdir, state_name):
    ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING")
    _fails_at_start(_writer(updates, workdir, state=state_name, key="ad_id"), "Option 'time' is required")


def test_time_column_that_is_not_a_timestamp(spark, updates, workdir, state_name):
    ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING")
    q = _writer(updates, workdir, state=state_name, key="ad_id", time="campaign")
    _fails_at_start(q, "column 'campaign' has type STRING; it must be TIMESTAMP")


def test_unknown_option_and_wrong_key_type(spark, updates, workdir, state_name):
    ss.State.create(spark, state_name, key="ad_id BIGINT", value="campaign STRING")
    q = _writer(updates, workdir, state=state_name, key="ad_id", time="ts", latness="5 seconds")
    _fails_at_start(q, "Unknown option.*latness.*Supported: idleTimeout, key, lateness, maxAhead, state, time, value")
    q = _writer(updates, workdir / "2", state=state_name, key="ad_id", time="ts")
    _fails_at_start(q, "Column 'ad_id' has type STRING, but State '.*' expects ad_id BIGINT")


def test_bad_lateness(spark, updates, workdir, state_name):
    ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING")
    q = _writer(updates, workdir, state=state_name, key="ad_id", time="ts", lateness="soon")
    _fails_at_start(q, "Option 'lateness': 'soon' is not an interval")


def test_bad_state_definitions(spark):
    with pytest.raises(ss.SharedStateError, match="Invalid State name '../escape'"):
        ss.State.create(spark, "../escape", key="k STRING", value="v STRING")
    with pytest.raises(ss.SharedStateError, match="Unknown update rule 'median'.*replace"):
        ss.State.create(spark, "median_state", key="k STRING", value="v STRING", rule="median")
    with pytest.raises(ss.SharedStateError, match="the key schema 'k STRANGE' is not a valid DDL"):
        ss.State.create(spark, "bad_ddl", key="k STRANGE", value="v STRING")
    with pytest.raises(ss.SharedStateError, match="Unknown State 'never_made'"):
        ss.State.get(spark, "never_made")


def test_redefining_a_state_is_an_error(spark, state_name):
    ss.State.create(spark, state_name, key="k STRING", value="v STRING", partitions=2)
    assert ss.State.create(spark, state_name, key="k STRING", value="v STRING", partitions=2).partitions == 2
    with pytest.raises(ss.SharedStateError, match="already exists with a different definition"):
        ss.State.create(spark, state_name, key="k STRING", value="v STRING", partitions=3)


def test_fetch_join_validates_at_the_call(spark, workdir, state_name):
    ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING")
    (workdir / "ev").mkdir()
    events = spark.readStream.schema("ad_id STRING, ts TIMESTAMP, n INT").parquet(str(workdir / "ev"))
    with pytest.raises(ss.SharedStateError, match="Unknown State 'nope'"):
        ss.fetch_join(events, "nope", key="ad_id", time="ts")
    with pytest.raises(ss.SharedStateError, match="column 'missing' does not exist"):
        ss.fetch_join(events, state_name, key="missing", time="ts")
    with pytest.raises(ss.SharedStateError, match="column 'n' has type INT; it must be TIMESTAMP"):
        ss.fetch_join(events, state_name, key="ad_id", time="n")
    with pytest.raises(ss.SharedStateError, match="rule 'median' is not supported; supported: latest"):
        ss.fetch_join(events, state_name, key="ad_id", time="ts", rule="median")
    with pytest.raises(ss.SharedStateError, match="how 'outer' is not supported; supported: left, inner"):
        ss.fetch_join(events, state_name, key="ad_id", time="ts", how="outer")
    clash = events.withColumnRenamed("n", "campaign")
    with pytest.raises(ss.SharedStateError, match="would add column\\(s\\) campaign"):
        ss.fetch_join(clash, state_name, key="ad_id", time="ts")


def test_null_keys_and_times_go_to_the_rejected_table(spark, workdir, state_name):
    state = ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING")
    frame = pd.DataFrame(
        {
            "ad_id": ["a", None, "b"],
            "ts": pd.to_datetime([1_000_000, 2_000_000, None], unit="us", utc=True),
            "campaign": ["c1", "c2", "c3"],
        }
    )
    write_batches(workdir / "in", [frame])
    updates = spark.readStream.schema(UPDATE_SCHEMA).parquet(str(workdir / "in"))
    q = _writer(updates, workdir, state=state_name, key="ad_id", time="ts").start()
    q.processAllAvailable()
    rejected = state.late_updates().toPandas()
    assert sorted(rejected["reason"]) == ["null_key", "null_time"]
    assert rejected.loc[rejected["reason"] == "null_time", "key"].iloc[0]["ad_id"] == "b"
    assert rejected.loc[rejected["reason"] == "null_key", "value"].iloc[0]["campaign"] == "c2"
    assert state.progress()["updates_rejected"] == 2
    wait_until(lambda: q.lastProgress is not None, 30)
    assert q.lastProgress["sink"]["metrics"]["updatesRejected"] == "2"


def test_rules_that_do_not_fit_the_value_type(spark, workdir, state_name):
    with pytest.raises(ss.SharedStateError, match="sum.*STRING|STRING.*sum"):
        ss.State.create(spark, state_name + "_sum", key="k STRING", value="name STRING", rule="sum")
    ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING")
    (workdir / "ev").mkdir()
    events = spark.readStream.schema("ad_id STRING, ts TIMESTAMP").parquet(str(workdir / "ev"))
    with pytest.raises(ss.SharedStateError, match="avg.*numeric.*campaign.*STRING"):
        ss.fetch_join(events, state_name, key="ad_id", time="ts", rule="avg", window="1 minute")
    with pytest.raises(ss.SharedStateError, match="rule 'range' needs a window"):
        ss.fetch_join(events, state_name, key="ad_id", time="ts", rule="range")
    with pytest.raises(ss.SharedStateError, match="window applies to rule 'range' and the aggregates only"):
        ss.fetch_join(events, state_name, key="ad_id", time="ts", window="1 minute")
    with pytest.raises(ss.SharedStateError, match="Option 'window': 'soon' is not an interval"):
        ss.fetch_join(events, state_name, key="ad_id", time="ts", rule="count", window="soon")


def test_value_schema_that_does_not_match_the_state_leaves_it_untouched(spark, updates, workdir, state_name):
    state = ss.State.create(spark, state_name, key="ad_id STRING", value="clicks BIGINT")
    before = state.progress()
    # the input's campaign column is a STRING, the State's value a BIGINT
    _fails_at_start(
        _writer(updates, workdir, state=state_name, key="ad_id", time="ts", value="campaign"),
        "Column 'campaign' has type STRING, but State '.*' expects clicks BIGINT",
    )
    after = state.progress()
    assert after["writers"] == before["writers"] == {}, "a refused query registers no writer"
    assert after["update_is"] == before["update_is"] and after["keys"] == 0


def test_progress_table_options(spark, state_name):
    ss.State.create(spark, state_name, key="ad_id STRING", value="campaign STRING")

    def read(**options):
        r = spark.readStream.format("sharedstate").option("state", state_name)
        for k, v in options.items():
            r = r.option(k, v)
        return r.load()

    # a fetch join's tick source is internal: its bookkeeping is no user option, so naming it is an error
    with pytest.raises(Exception, match="(?i)Unknown read option\\(s\\) fetchjoin"):
        spark.read.format("sharedstate").option("state", state_name).option("fetchJoin", "j").load().collect()
    assert read(table="progress").columns == ["__sharedstate_u", "__sharedstate_u_from"]
