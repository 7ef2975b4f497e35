"""What every method gets for one point, and the query bookkeeping they share."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.streaming import StreamingQuery

from workload import EVENT_SCHEMA, UPDATE_SCHEMA, Shape

# The columns every sink row has, in this order.
SINK_COLUMNS = ["event_id", "ad_id", "ts", "clicked", "campaign", "campaign_time"]
SINK_SCHEMA = EVENT_SCHEMA + ", campaign INT, campaign_time TIMESTAMP"
# The sink table checkpoints its log this rarely: a Delta checkpoint is written by the committing
# batch itself (1-3 s here), which would stall whichever method's batch hits it, not measure the join.
SINK_CHECKPOINT_INTERVAL = 1000


@dataclass
class Point:
    spark: SparkSession
    shape: Shape
    work: Path  # this point's scratch directory (live inputs, checkpoints, tables)
    sink: Path  # the Delta table of enriched views every method appends to
    trigger: str  # processing-time trigger of every query, e.g. "250 milliseconds"
    uid: str  # unique per point: query and State names
    redis_port: int | None = None

    @property
    def live_updates(self) -> Path:
        return self.work / "live" / "updates"

    @property
    def live_events(self) -> Path:
        return self.work / "live" / "events"

    def checkpoint(self, name: str) -> str:
        return str(self.work / "checkpoints" / name)

    def updates(self) -> DataFrame:
        return self.spark.readStream.schema(UPDATE_SCHEMA).parquet(str(self.live_updates))

    def events(self) -> DataFrame:
        return self.spark.readStream.schema(EVENT_SCHEMA).parquet(str(self.live_events))

    def create_sink(self) -> None:
        """The empty sink table, before any method starts (the harness calls it)."""
        self.spark.sql(
            f"CREATE TABLE delta.`{self.sink}` ({SINK_SCHEMA}) USING delta "
            f"TBLPROPERTIES ('delta.checkpointInterval' = '{SINK_CHECKPOINT_INTERVAL}')"
        )

    def append(self, batch: DataFrame) -> None:
        """Every method's output goes into the sink this one way: a plain Delta append of the batch.

        The same for all, so the sink costs every method the same. Not Delta's streaming sink: in
        Delta 4.4 its idempotency check (txnVersion) rebuilds the table's state in a Spark job every
        batch, which only the methods writing with it would pay (delta-io/delta#6929 removes it).
        """
        batch.select(*SINK_COLUMNS).write.format("delta").mode("append").save(str(self.sink))

    def sink_stream(self, enriched: DataFrame, name: str, checkpoint: str) -> StreamingQuery:
        """Starts a query that appends each micro-batch of `enriched` to the sink (see append)."""
        return (
            enriched.writeStream.foreachBatch(lambda batch, _batch_id: self.append(batch))
            .queryName(name)
            .outputMode("append")
            .option("checkpointLocation", self.checkpoint(checkpoint))
            .trigger(processingTime=self.trigger)
            .start()
        )


@dataclass
class Method:
    """Starts its queries for a point; the harness feeds, waits, stops."""

    point: Point
    queries: list[StreamingQuery] = field(default_factory=list)

    name = "?"
    answers = True  # False for the harness ceiling: its rows are not answers, the oracle does not apply

    def start(self) -> None:
        raise NotImplementedError

    def failure(self) -> str | None:
        for q in self.queries:
            if q.exception() is not None:
                return f"query {q.name} failed: {q.exception()}"
        return None

    def stop(self) -> None:
        for q in self.queries:
            try:
                q.stop()
            except Exception:  # a failed query may refuse to stop cleanly; it is already reported
                pass

    def cleanup(self) -> None:
        """Releases what outlives the queries (States, Redis keys)."""

    def progress(self) -> dict:
        """Per query: batches run and the mean of each phase of a batch, from Spark's progress."""
        out = {}
        for q in self.queries:
            reports = [p for p in q.recentProgress if p.get("numInputRows", 0) or p.get("stateOperators")]
            if not reports:
                continue
            phases: dict[str, list[float]] = {}
            for p in reports:
                for k, v in (p.get("durationMs") or {}).items():
                    phases.setdefault(k, []).append(v)
            ops = reports[-1].get("stateOperators") or []
            out[q.name] = {
                "batches": len(reports),
                "mean_ms": {k: round(sum(v) / len(v), 1) for k, v in phases.items()},
                "state_rows_last": [op.get("numRowsTotal") for op in ops],
            }
        return out
