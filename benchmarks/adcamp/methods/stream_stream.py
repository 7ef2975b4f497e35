"""Peer (a): a stream-stream join with a time-range condition, reduced to the latest match.

Both inputs carry event-time watermarks (views: their jitter; updates: the lateness). A view joins
every update of its ad in [ts - range, ts] (left outer, so views with no update survive), then a
streaming aggregation per view keeps the match with the largest update time; in append mode it emits
a view once the watermark has passed its time, when no later-arriving update can still match.
The range must bound the gap between an ad's updates, or views get no (or an older) campaign.
"""

from __future__ import annotations

from pyspark.sql import functions as F

from methods.base import SINK_COLUMNS, Method


class StreamStreamJoin(Method):
    name = "stream-stream join"

    def start(self) -> None:
        p = self.point
        s = p.shape
        views = p.events().withWatermark("ts", f"{int(s.event_jitter_s * 1000)} milliseconds").alias("v")
        updates = (
            p.updates()
            .select(F.col("ad_id").alias("u_ad"), F.col("ts").alias("uts"), "campaign")
            .withWatermark("uts", f"{int(s.lateness_s * 1000)} milliseconds")
        )
        cond = (
            (F.col("v.ad_id") == F.col("u_ad"))
            & (F.col("uts") <= F.col("v.ts"))
            & (F.col("uts") >= F.col("v.ts") - F.expr(f"INTERVAL {int(s.range_s * 1000)} MILLISECONDS"))
        )
        joined = views.join(updates, cond, "leftOuter")
        latest = (
            joined.groupBy("event_id", "ad_id", "ts", "clicked")
            .agg(F.max_by("campaign", "uts").alias("campaign"), F.max("uts").alias("campaign_time"))
            .select(*SINK_COLUMNS)
        )
        self.queries.append(p.sink_stream(latest, f"ssjoin-{p.uid}", "join"))
