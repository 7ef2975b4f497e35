"""What the partial-State demos (fraud, cf) share: a file stream read one file per micro-batch, and
a sharedstate sink with the workload's lateness."""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

TRIGGER = "300 milliseconds"


def file_stream(spark: SparkSession, schema: str, directory: Path) -> DataFrame:
    """The parquet files in `directory`, one per micro-batch, in modification-time order."""
    return spark.readStream.schema(schema).option("maxFilesPerTrigger", 1).parquet(str(directory))


def state_sink(
    df: DataFrame,
    state: str,
    key: str,
    lateness: str,
    checkpoint: Path,
    trigger: str = TRIGGER,
    name: str | None = None,
) -> StreamingQuery:
    """Writes `df` into `state` keyed by `key`, timed by its `ts` column, a micro-batch every `trigger`
    (`name`: the query's name, which its driver thread's name carries)."""
    writer = df.writeStream.queryName(name) if name else df.writeStream
    return (
        writer.format("sharedstate")
        .option("state", state)
        .option("key", key)
        .option("time", "ts")
        .option("lateness", lateness)
        .option("checkpointLocation", str(checkpoint))
        .trigger(processingTime=trigger)
        .start()
    )
