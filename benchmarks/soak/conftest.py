from __future__ import annotations

import pytest

import sharedstate as ss


@pytest.fixture(scope="module")
def soak_spark():
    # The session of the tests that ran before in this process, if any (getOrCreate), else a new one;
    # left running for them: whoever created it stops it.
    return ss.session("sharedstate-tests", master="local[4]", **{"spark.sql.shuffle.partitions": "2"})
