"""Peer (b): updates appended to a Delta table; views joined against it, re-read every batch.

The update query appends each batch to a Delta table. The view query's foreachBatch reads the
table fresh, takes P = max(update time) - lateness (every update older than P is in the table,
by the lateness bound), answers the views older than P with an as-of join (same ad, latest update
time <= the view's time, within the same range as peer (a), which lets Delta skip old files) and
keeps the others waiting for a later batch.
"""

from __future__ import annotations

from pathlib import Path

from pyspark.sql import functions as F

from methods.base import SINK_COLUMNS, Method
from methods.pending import PendingViews, views_with_heartbeat
from workload import SECOND


class DeltaStaticJoin(Method):
    name = "delta stream-static"

    def start(self) -> None:
        p = self.point
        s = p.shape
        table = str(p.work / "updates_delta")  # written only by this point's update query
        lateness_us, range_us = int(s.lateness_s * SECOND), int(s.range_s * SECOND)
        pending = PendingViews()
        spark = p.spark

        def write_updates(batch, _batch_id):
            batch.write.format("delta").mode("append").save(table)

        def enrich(batch, _batch_id):
            if not (Path(table) / "_delta_log" / f"{0:020d}.json").exists():  # no update committed yet
                pending.split(batch, None)
                return
            updates = spark.read.format("delta").load(table)
            newest = updates.agg(F.max(F.unix_micros("ts"))).first()[0]
            progress = None if newest is None else newest - lateness_us
            ready = pending.split(batch, progress)
            if ready is None:
                return
            ready = ready.cache()
            lowest = ready.agg(F.min(F.unix_micros("ts"))).first()[0]
            if lowest is None:
                ready.unpersist()
                return
            recent = updates.filter(
                (F.col("ts") >= F.timestamp_micros(F.lit(lowest - range_us)))
                & (F.col("ts") < F.timestamp_micros(F.lit(progress)))
            ).select(F.col("ad_id").alias("u_ad"), F.col("ts").alias("uts"), "campaign")
            v = ready.alias("v")
            cond = (
                (F.col("v.ad_id") == F.col("u_ad"))
                & (F.col("uts") <= F.col("v.ts"))
                & (F.col("uts") >= F.col("v.ts") - F.expr(f"INTERVAL {range_us // 1000} MILLISECONDS"))
            )
            out = (
                v.join(recent, cond, "left")
                .groupBy("event_id", "ad_id", "ts", "clicked")
                .agg(F.max_by("campaign", "uts").alias("campaign"), F.max("uts").alias("campaign_time"))
                .select(*SINK_COLUMNS)
            )
            p.append(out)
            ready.unpersist()

        self.queries.append(
            p.updates()
            .writeStream.foreachBatch(write_updates)
            .queryName(f"delta-updates-{p.uid}")
            .option("checkpointLocation", p.checkpoint("updates"))
            .trigger(processingTime=p.trigger)
            .start()
        )
        self.queries.append(
            views_with_heartbeat(p)
            .writeStream.foreachBatch(enrich)
            .queryName(f"delta-views-{p.uid}")
            .option("checkpointLocation", p.checkpoint("views"))
            .trigger(processingTime=p.trigger)
            .start()
        )
