"""SparkSession helpers: the plugin jar, Delta, and local defaults, set in one call."""

from __future__ import annotations

import os
from typing import Any

from pyspark.sql import SparkSession

from sharedstate._jars import DELTA_COORDINATE, SPARK_PROVIDED_EXCLUDES, conf_file, plugin_jar

PLUGIN_CLASS = "io.sharedstate.spark.SharedStatePlugin"
# Spark's stateful operators (aggregations, dropDuplicates, (flat)mapGroupsWithState, stream-stream
# joins) keep their state in sharedstate's store provider (docs/statestore.md).
STATE_STORE_PROVIDER = "io.sharedstate.spark.statestore.SharedStateStoreProvider"
STATE_STORE_PROVIDER_KEY = "spark.sql.streaming.stateStore.providerClass"


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


def configure(builder: SparkSession.Builder, state_store: bool = False, **conf: Any) -> SparkSession.Builder:
    """Adds the sharedstate jar, its Spark plugin, Delta, and the local defaults of conf/ to a builder.

    ``state_store=True`` makes Spark's stateful operators keep their state in sharedstate's state
    store provider (``spark.sql.streaming.stateStore.providerClass``; a query restarted from a
    checkpoint keeps the provider it started with). Settings passed here win over the defaults.
    Call before the first ``getOrCreate()`` of the process: jars are fixed when the JVM starts.
    """
    existing = builder._options  # what the caller already set
    settings: dict[str, str] = {k: v for k, v in _defaults().items() if k not in existing}
    settings["spark.jars"] = _append(existing.get("spark.jars"), str(plugin_jar()))
    settings["spark.jars.packages"] = _append(existing.get("spark.jars.packages"), DELTA_COORDINATE)
    if "spark.jars.excludes" not in existing:
        settings["spark.jars.excludes"] = SPARK_PROVIDED_EXCLUDES
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
    ivy = os.environ.get("SHAREDSTATE_IVY_DIR")
    if ivy and "spark.jars.ivy" not in existing:
        settings["spark.jars.ivy"] = ivy
    if state_store:
        settings[STATE_STORE_PROVIDER_KEY] = STATE_STORE_PROVIDER
    settings.update({k: str(v) for k, v in conf.items()})
    for key, value in settings.items():
        builder = builder.config(key, value)
    return builder


def session(
    app_name: str = "sharedstate", master: str = "local[*]", state_store: bool = False, **conf: Any
) -> SparkSession:
    """A ready SparkSession: local Spark (the embedded default) with the plugin and Delta.

    ``state_store=True`` keeps the state of Spark's stateful operators in sharedstate (see
    ``configure``). Extra Spark settings go in ``conf``
    (``session("app", **{"spark.sql.shuffle.partitions": "8"})``).
    """
    builder = SparkSession.builder.appName(app_name).master(master)
    return configure(builder, state_store=state_store, **conf).getOrCreate()
