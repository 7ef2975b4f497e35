"""Unit tests of the AdCamp benchmark harness's parts (the processed rate, the rate search, the Spark
settings); it/test_bench_adcamp.py runs the whole harness. pytest imports this file with its own
directory on sys.path (the default "prepend" import mode), as `python benchmarks/adcamp/run.py` does."""

from __future__ import annotations

import numpy as np
import pytest

from measure import processed_rate


@pytest.mark.parametrize("seed", range(20))
def test_processed_rate_is_the_offered_rate_for_a_method_that_keeps_up_in_batches(seed):
    rng = np.random.default_rng(seed)
    fed = np.repeat(np.arange(0, 9, 0.25), 250)  # 1,000 views/s in 0.25 s files over 9 s
    interval = rng.uniform(0.5, 2.0)  # one micro-batch per interval, each file out in the next batch
    phase = rng.uniform(0, interval)
    visible = (np.floor((fed - phase) / interval) + 1) * interval + phase + rng.uniform(0.2, 3.0)
    rate = processed_rate(fed, visible, 1000)
    assert 0.93 * 1000 <= rate <= 1.07 * 1000, (interval, phase, rate)


@pytest.mark.parametrize("seed", range(20))
def test_processed_rate_sees_a_method_that_falls_behind(seed):
    rng = np.random.default_rng(seed)
    fed = np.repeat(np.arange(0, 9, 0.25), 250)
    capacity = 800  # views/s: a backlog that grows, out in batches of what is done by then
    done_at = 1.0 + np.arange(len(fed)) / capacity
    interval = rng.uniform(0.5, 2.0)
    visible = np.ceil(done_at / interval) * interval
    rate = processed_rate(fed, visible, 1000)
    assert rate < 0.9 * 1000 and rate == pytest.approx(capacity, rel=0.07), (interval, rate)


@pytest.mark.parametrize("steps", [1, 2])
def test_processed_rate_is_unknown_when_the_views_came_out_in_too_few_batches(steps):
    fed = np.repeat(np.arange(0, 9, 0.25), 250)
    visible = 20.0 + np.floor(np.linspace(0, steps, len(fed), endpoint=False))  # `steps` output batches
    assert len(np.unique(visible)) == steps
    assert processed_rate(fed, visible, 1000) is None


def test_search_runs_a_failed_point_again_once_but_never_a_wrong_one():
    from harness import search
    from measure import PointResult

    calls: dict[int, int] = {}

    def run(rate):  # 4,000/s stalls on its first attempt; 16,000/s is wrong; above 8,000/s is too fast
        calls[rate] = calls.get(rate, 0) + 1
        sustained = rate <= 8000 and not (rate == 4000 and calls[rate] == 1)
        wrong = int(rate == 16000)
        return PointResult(
            "m",
            1000,
            rate,
            10,
            10,
            0,
            0,
            wrong,
            wrong == 0,
            1.0,
            2.0,
            3.0,
            2.0,
            0.0,
            float(rate),
            sustained and not wrong,
            "ok",
        )

    best, tried = search(run, 1000, 250, 64000, 0, True, retries=1)
    assert best == 8000
    assert calls == {1000: 1, 2000: 1, 4000: 2, 8000: 1, 16000: 1}, "the wrong point is not run again"
    assert [(p.event_rate, p.attempt, p.discarded) for p in tried] == [
        (1000, 1, False),
        (2000, 1, False),
        (4000, 2, False),
        (8000, 1, False),
        (16000, 1, False),
        (4000, 1, True),
    ]


def test_conf_goes_on_top_of_the_common_settings_and_needs_key_equals_value(capsys):
    import run

    args = run._parse(
        ["--out", "x", "--conf", "spark.sql.parquet.outputTimestampType=INT96", "--conf", "spark.some.option=a=b"]
    )
    conf = run.spark_conf(args)
    assert conf["spark.sql.parquet.outputTimestampType"] == "INT96"  # Spark's legacy default, on request
    assert conf["spark.some.option"] == "a=b"
    assert conf["spark.databricks.delta.snapshotPartitions"] == "2"
    assert run.spark_conf(run._parse(["--out", "x"]))["spark.sql.parquet.outputTimestampType"] == "TIMESTAMP_MICROS"
    with pytest.raises(SystemExit):
        run._parse(["--out", "x", "--conf", "spark.sql.shuffle.partitions"])
    assert "--conf takes KEY=VALUE, got 'spark.sql.shuffle.partitions'" in capsys.readouterr().err


@pytest.mark.parametrize("rates", [(50, 3000), (400, 1700), (2000, 500)])
def test_views_are_staged_slot_by_slot_in_arrival_order(tmp_path, rates):
    import pyarrow.parquet as pq

    from workload import SECOND, Shape, stage

    shape = Shape(update_rate=rates[0], event_rate=rates[1], seconds=2.0, tail_s=0.5, slot_s=0.25, seed=3)
    staged = stage(shape, tmp_path)
    starts = staged.event_slot_starts
    assert starts[0] == 0 and starts[-1] == round(shape.event_rate * shape.slots * shape.slot_s)
    for i, f in enumerate(staged.event_files):
        ids = pq.read_table(f, columns=["event_id"]).column(0).to_numpy()
        assert list(ids) == list(range(starts[i], starts[i + 1])), i
        arrival = (ids * SECOND) // shape.event_rate  # each view in the slot its arrival falls in
        assert ((arrival // int(shape.slot_s * SECOND)) == i).all(), i


@pytest.mark.parametrize("seed", range(4))
def test_file_by_file_oracle_equals_merge_asof_over_every_view(tmp_path, seed):
    import pandas as pd

    from measure import NULL, expected
    from sharedstate.testing.adcamp import accepted_updates, oracle
    from workload import Shape, as_workload, stage

    # few ads and a long lateness: many views fall before their ad's first update (no campaign), many
    # updates arrive out of order, some views pick ads no update covers
    shape = Shape(update_rate=[20, 60, 200, 500][seed], event_rate=1500, seconds=3.0, tail_s=1.0, seed=seed)
    staged = stage(shape, tmp_path)
    got = expected(staged)
    work = as_workload(staged)
    joined = oracle(work.events, accepted_updates(work), value="campaign", time_column="campaign_time")
    joined = joined.sort_values("event_id")
    assert (joined["event_id"].to_numpy() == np.arange(staged.measured_events)).all()
    want_campaign = joined["campaign"].fillna(NULL).astype(np.int64).to_numpy()
    times = pd.to_datetime(joined["campaign_time"], utc=True)
    want_time = np.where(times.isna(), NULL, times.astype("datetime64[us, UTC]").astype("int64"))
    assert 0 < np.count_nonzero(want_campaign == NULL) < len(want_campaign)
    assert (got.campaign.astype(np.int64) == want_campaign).all()
    assert (got.campaign_time == want_time).all()
