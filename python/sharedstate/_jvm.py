"""Access to the plugin's JVM entry points through py4j."""

from __future__ import annotations

from pyspark.sql import SparkSession


def api(spark: SparkSession):
    """io.sharedstate.spark.SharedStateApi of the session's JVM: py4j's adapter over StateHandles."""
    return spark._jvm.io.sharedstate.spark.SharedStateApi
