"""Not a peer: the harness's own ceiling. Views are copied to the sink with no join at all.

Same file source, trigger and sink as every method, so its max sustained rate bounds what any
method can reach in this harness on this machine. Its campaign columns are made up from the view
(not null: a null column costs the Parquet writer next to nothing, an answered one does not), so
the sink pays what it pays for answered rows. Its output is not an answer, so it is not checked
against the oracle and never counts as the best peer.
"""

from __future__ import annotations

from pyspark.sql import functions as F

from methods.base import SINK_COLUMNS, Method


class CopyCeiling(Method):
    name = "ceiling (copy, no join)"
    answers = False

    def start(self) -> None:
        p = self.point
        copied = (
            p.events()
            .withColumn("campaign", (F.col("ad_id") % 1000).cast("int"))
            .withColumn("campaign_time", F.col("ts") - F.expr("INTERVAL 1 SECOND"))
            .select(*SINK_COLUMNS)
        )
        self.queries.append(p.sink_stream(copied, f"ceiling-{p.uid}", "ceiling"))
