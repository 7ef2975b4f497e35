"""ss.configure(kafka=True) adds Spark's Kafka connector to the one resolution request, beside Delta
and the caller's packages (fast: the resolution itself is stubbed)."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import SparkSession

import sharedstate as ss
from sharedstate import _packages
from sharedstate._jars import DELTA_COORDINATE, KAFKA_CONNECTOR_COORDINATE


def _asked(monkeypatch, **kwargs) -> list[str]:
    asked = []

    def fake_resolve(coordinates, excludes, repositories, ivy):
        asked.append(list(coordinates))
        return [Path("/resolved/x.jar")]

    monkeypatch.setattr(_packages, "resolve", fake_resolve)
    ss.configure(SparkSession.builder, **kwargs)
    assert len(asked) == 1
    return asked[0]


def test_kafka_adds_the_connector_of_this_spark_release(monkeypatch):
    assert KAFKA_CONNECTOR_COORDINATE == "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
    asked = _asked(monkeypatch, kafka=True, packages=["g:a:1"])
    assert asked == [DELTA_COORDINATE, KAFKA_CONNECTOR_COORDINATE, "g:a:1"]


def test_without_kafka_the_connector_is_not_resolved(monkeypatch):
    assert _asked(monkeypatch) == [DELTA_COORDINATE]
