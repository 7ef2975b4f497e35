"""Views that wait in the driver until the update progress P has passed them (foreachBatch peers).

A foreachBatch query has no operator state of its own, so a read-committed answer means keeping
the not-yet-answerable views between batches; here as a locally checkpointed DataFrame (it lives as
long as the application; a restart would lose it, which this benchmark does not exercise).
"""

from __future__ import annotations

from pyspark.sql import DataFrame
from pyspark.sql import functions as F

from methods.base import Point


def views_with_heartbeat(point: Point) -> DataFrame:
    """The view stream plus one heartbeat row a second (event_id -1): a foreachBatch query runs only
    when input arrives, and waiting views must be re-checked even when no view comes."""
    beat = (
        point.spark.readStream.format("rate")
        .option("rowsPerSecond", 1)
        .load()
        .select(
            F.lit(-1).cast("bigint").alias("event_id"),
            F.lit(-1).cast("bigint").alias("ad_id"),
            F.col("timestamp").alias("ts"),
            F.lit(False).alias("clicked"),
        )
    )
    return point.events().unionByName(beat)


class PendingViews:
    def __init__(self) -> None:
        self._waiting: DataFrame | None = None

    def split(self, batch: DataFrame, progress_us: int | None) -> DataFrame | None:
        """Views answerable now (time < P), from this batch and the ones that waited; keeps the rest."""
        batch = batch.filter(F.col("event_id") >= 0)  # drop heartbeats
        candidates = batch if self._waiting is None else batch.unionByName(self._waiting)
        if progress_us is None:
            ready, rest = None, candidates
        else:
            p = F.timestamp_micros(F.lit(progress_us))
            ready, rest = candidates.filter(F.col("ts") < p), candidates.filter(F.col("ts") >= p)
        self._waiting = rest.localCheckpoint(eager=True)
        return ready
