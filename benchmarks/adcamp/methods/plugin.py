"""This plugin: the update stream writes a State, a read-committed `latest` fetch join enriches views."""

from __future__ import annotations

import sharedstate as ss
from methods.base import SINK_COLUMNS, Method


class PluginFetchJoin(Method):
    name = "sharedstate"
    durable = False  # True: the State keeps its Delta changelog under the point's scratch directory

    def start(self) -> None:
        p = self.point
        root = str(p.work / "root") if self.durable else None
        self.state = ss.State.create(p.spark, f"campaigns_{p.uid}", key="ad_id BIGINT", value="campaign INT", root=root)
        lateness = f"{int(p.shape.lateness_s * 1000)} milliseconds"
        self.queries.append(
            p.updates()
            .writeStream.format("sharedstate")
            .queryName(f"ss-updates-{p.uid}")
            .option("state", self.state.name)
            .option("key", "ad_id")
            .option("time", "ts")
            .option("value", "campaign")
            .option("lateness", lateness)
            .option("checkpointLocation", p.checkpoint("updates"))
            .trigger(processingTime=p.trigger)
            .start()
        )
        enriched = ss.fetch_join(
            p.events(), self.state, key="ad_id", time="ts", rule="latest", mode="committed", how="left"
        )
        enriched = enriched.withColumnRenamed(self.state.time_column, "campaign_time").select(*SINK_COLUMNS)
        self.queries.append(p.sink_stream(enriched, f"ss-fetch-{p.uid}", "fetch"))

    def cleanup(self) -> None:
        self.state.drop()


class DurablePluginFetchJoin(PluginFetchJoin):
    """The same queries on a durable State: every update epoch is a Delta commit of its changelog files
    (docs/durability.md) before U moves, so durability's cost shows in both U and the fetch latency."""

    name = "sharedstate-durable"
    durable = True
