"""Shared fixtures: one local SparkSession with the plugin for the whole test run."""

from __future__ import annotations

import itertools
import shutil
import tempfile
from pathlib import Path

import pytest

import sharedstate as ss

_names = itertools.count()


@pytest.fixture(scope="session")
def spark():
    # local[4]: two concurrent micro-batch queries plus headroom, on the 2-core CI machine.
    # kafka=True: Spark's Kafka connector for test_kafka_*, fixed when the JVM starts.
    session = ss.session("sharedstate-tests", master="local[4]", kafka=True, **{"spark.sql.shuffle.partitions": "2"})
    yield session
    for query in session.streams.active:
        query.stop()
    session.stop()


@pytest.fixture(scope="session")
def kafka():
    """One local Kafka broker (KRaft, 127.0.0.1) for the run, started by the first test that asks;
    tests use their own topics."""
    from sharedstate.testing.kafka import KafkaBroker

    with KafkaBroker() as broker:
        yield broker


@pytest.fixture
def workdir():
    path = Path(tempfile.mkdtemp(prefix="sharedstate-test-"))
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def state_name(request):
    """A State name unique to the test (States live as long as the application)."""
    base = "".join(c if c.isalnum() else "_" for c in request.node.name)[:60]
    return f"t{next(_names)}_{base}"


@pytest.fixture(autouse=True)
def stop_queries(spark):
    yield
    for query in spark.streams.active:
        query.stop()
