"""Where the plugin jar and the default configuration files are."""

from __future__ import annotations

import os
from pathlib import Path

from sharedstate._version import __version__

PACKAGE_DIR = Path(__file__).resolve().parent
JAR_NAME = f"sharedstate-spark_2.13-{__version__}.jar"
MAVEN_COORDINATE = f"io.sharedstate:sharedstate-spark_2.13:{__version__}"
# The file repository (Maven layout) the build publishes the plugin's pom and jar into (`make jar`):
# `spark-submit --repositories file://<it> --packages <MAVEN_COORDINATE>`. $SHAREDSTATE_LOCAL_REPOSITORY
# (the Makefile exports it), or target/repo at the root of the checkout this package lives in.
LOCAL_REPOSITORY = Path(os.environ.get("SHAREDSTATE_LOCAL_REPOSITORY") or PACKAGE_DIR.parents[1] / "target" / "repo")
# delta-spark 4.4.1 is the Python package; its JVM artifact for Spark 4.2 on Maven Central is 4.4.0.
DELTA_COORDINATE = "io.delta:delta-spark_4.2_2.13:4.4.0"
# Spark's own Kafka source and sink (format "kafka"), of the Spark release pyspark is.
KAFKA_CONNECTOR_COORDINATE = "org.apache.spark:spark-sql-kafka-0-10_2.13:4.2.0"
# Delta's transitive dependencies that Spark 4.2.0 already ships (newer): Spark's copies win on the
# class path anyway, so resolving Delta's older ones would only download and ship dead jars.
SPARK_PROVIDED_EXCLUDES = ",".join(
    [
        "com.fasterxml.jackson.core:jackson-annotations",
        "com.fasterxml.jackson.core:jackson-core",
        "com.fasterxml.jackson.core:jackson-databind",
        "com.github.luben:zstd-jni",
        "com.google.code.findbugs:jsr305",
        "commons-pool:commons-pool",
        "io.airlift:aircompressor",
        "org.apache.hadoop:hadoop-client-api",
        "org.apache.hadoop:hadoop-client-runtime",
        "org.apache.logging.log4j:log4j-api",
        "org.apache.logging.log4j:log4j-core",
        "org.apache.logging.log4j:log4j-slf4j2-impl",
        "org.apache.parquet:parquet-column",
        "org.apache.parquet:parquet-common",
        "org.apache.parquet:parquet-encoding",
        "org.apache.parquet:parquet-format-structures",
        "org.apache.parquet:parquet-hadoop",
        "org.apache.parquet:parquet-jackson",
        "org.locationtech.jts:jts-core",
        "org.roaringbitmap:RoaringBitmap",
        "org.slf4j:slf4j-api",
        "org.xerial.snappy:snappy-java",
    ]
)


def plugin_jar() -> Path:
    """The assembly jar: $SHAREDSTATE_JAR, or the one bundled in the package."""
    explicit = os.environ.get("SHAREDSTATE_JAR")
    jar = Path(explicit) if explicit else PACKAGE_DIR / "jars" / JAR_NAME
    if not jar.is_file():
        raise FileNotFoundError(
            f"sharedstate plugin jar not found at {jar}. In a checkout, `make jar` builds it and "
            "copies it into the package; or set SHAREDSTATE_JAR to its path."
        )
    return jar


def conf_file(name: str) -> Path | None:
    """A file of the package's conf/ (copied from the repo's conf/ at build time)."""
    for directory in (PACKAGE_DIR / "conf", PACKAGE_DIR.parents[1] / "conf"):
        candidate = directory / name
        if candidate.is_file():
            return candidate
    return None
