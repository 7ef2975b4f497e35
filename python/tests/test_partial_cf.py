"""SDG's online collaborative filtering (sharedstate.demos.cf): a partitioned user-item State, a
partial co-occurrence State written by two tasks, recommendations by global fetches; every
recommendation equals the sequential oracle, on out-of-order ratings."""

from __future__ import annotations

from sharedstate.demos.cf import run
from sharedstate.testing.cf import make_ratings, recommendations_oracle


def test_recommendations_equal_the_sequential_replay(spark, workdir, state_name):
    work = make_ratings(seed=7)
    got = run(spark, work, workdir, partitions=2, prefix=state_name)
    expected = recommendations_oracle(work)
    assert got == expected
    assert any(v is None for v in expected.values()) and sum(v is not None for v in expected.values()) > 20
