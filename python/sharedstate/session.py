"""SparkSession helpers: the plugin jar, Delta (and any other packages), and local defaults, set in one call."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from pyspark.sql import SparkSession

from sharedstate import _packages
from sharedstate._jars import (
    DELTA_COORDINATE,
    KAFKA_CONNECTOR_COORDINATE,
    SPARK_PROVIDED_EXCLUDES,
    conf_file,
    plugin_jar,
)

PLUGIN_CLASS = "io.sharedstate.spark.SharedStatePlugin"


def _defaults() -> dict[str, str]:
    path = conf_file("spark-defaults.conf")
    values: dict[str, str] = {}
    if path is None:
        return values
    for line in path.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            key, _, value = line.partition(" ")
            values[key] = value.strip()
    return values


def _append(existing: str | None, item: str) -> str:
    parts = [p for p in (existing or "").split(",") if p]
    return ",".join(parts if item in parts else parts + [item])


def _split(value: Any) -> list[str]:
    return [p.strip() for p in str(value or "").split(",") if p.strip()]


def configure(
    builder: SparkSession.Builder, packages: Iterable[str] = (), kafka: bool = False, **conf: Any
) -> SparkSession.Builder:
    """Adds the sharedstate jar, its Spark plugin, Delta, and the local defaults of conf/ to a builder;
    with ``kafka=True`` also Spark's Kafka connector (``format("kafka")``, docs/kafka.md).

    ``packages``: more Maven coordinates (group:artifact:version) to put on the class path, such as
    ``org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0``; a ``spark.jars.packages`` passed in ``conf``
    joins them. They and Delta are resolved once into the cache (``$SHAREDSTATE_CACHE``, by default
    ``~/.cache/sharedstate``) and the JVM starts with the resolved files in ``spark.jars``, so a start
    runs no Ivy resolution and prints nothing (a ``spark.jars.packages`` already set on the builder
    is left to Spark, which resolves it at every start). Settings passed here win over the defaults. Call
    before the first ``getOrCreate()`` of the process: jars are fixed when the JVM starts.
    """
    existing = builder._options  # what the caller already set
    conf = dict(conf)
    kafka_connector = [KAFKA_CONNECTOR_COORDINATE] if kafka else []
    extra = _split(packages) if isinstance(packages, str) else list(packages)  # "a:b:1,c:d:2" or a list
    coordinates = [DELTA_COORDINATE, *kafka_connector, *extra, *_split(conf.pop("spark.jars.packages", ""))]
    excludes = _split(conf.pop("spark.jars.excludes", existing.get("spark.jars.excludes", SPARK_PROVIDED_EXCLUDES)))
    repositories = _split(conf.pop("spark.jars.repositories", existing.get("spark.jars.repositories", "")))
    ivy = conf.pop("spark.jars.ivy", existing.get("spark.jars.ivy"))
    resolved = _packages.resolve(coordinates, excludes, repositories, ivy)
    settings: dict[str, str] = {k: v for k, v in _defaults().items() if k not in existing}
    settings["spark.jars"] = conf.pop("spark.jars", existing.get("spark.jars"))
    for jar in [plugin_jar(), *resolved]:
        settings["spark.jars"] = _append(settings["spark.jars"], str(jar))
    # (the plugin's own session extensions load from the jar through ServiceLoader)
    # The plugin starts the State coordinator with the driver and a State host with every executor.
    settings["spark.plugins"] = _append(existing.get("spark.plugins"), PLUGIN_CLASS)
    settings["spark.sql.extensions"] = _append(
        existing.get("spark.sql.extensions"), "io.delta.sql.DeltaSparkSessionExtension"
    )
    settings.setdefault("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
    log_conf = conf_file("log4j2.properties")
    if log_conf is not None and "spark.driver.extraJavaOptions" not in existing:
        settings["spark.driver.extraJavaOptions"] = f"-Dlog4j2.configurationFile=file:{log_conf}"
    settings.update({k: str(v) for k, v in conf.items()})
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder


def session(
    app_name: str = "sharedstate",
    master: str = "local[*]",
    packages: Iterable[str] = (),
    kafka: bool = False,
    **conf: Any,
) -> SparkSession:
    """A ready SparkSession: local Spark (the embedded default) with the plugin and Delta, and with
    ``kafka=True`` Spark's Kafka source and sink (spark-sql-kafka-0-10, resolved like Delta).

    ``packages`` adds Maven coordinates, resolved once like Delta (see ``configure``). Extra Spark
    settings go in ``conf`` (``session("app", **{"spark.sql.shuffle.partitions": "8"})``).
    """
    builder = SparkSession.builder.appName(app_name).master(master)
    return configure(builder, packages, kafka=kafka, **conf).getOrCreate()
