"""This plugin: the update stream writes a State, a read-committed `latest` fetch join enriches views."""

from __future__ import annotations

import sharedstate as ss
from methods.base import SINK_COLUMNS, Method


class PluginFetchJoin(Method):
    name = "sharedstate"

    def start(self) -> None:
        p = self.point
        self.state = ss.State.create(p.spark, f"campaigns_{p.uid}", key="ad_id BIGINT", value="campaign INT")
        lateness = f"{int(p.shape.lateness_s * 1000)} milliseconds"
        self.queries.append(
            p.updates().writeStream.format("sharedstate").queryName(f"ss-updates-{p.uid}")
            .option("state", self.state.name).option("key", "ad_id").option("time", "ts")
            .option("value", "campaign").option("lateness", lateness)
            .option("checkpointLocation", p.checkpoint("updates")).trigger(processingTime=p.trigger).start())
        enriched = ss.fetch_join(p.events(), self.state, key="ad_id", time="ts", rule="latest",
                                 mode="committed", how="left")
        enriched = enriched.withColumnRenamed(self.state.time_column, "campaign_time").select(*SINK_COLUMNS)
        self.queries.append(
            enriched.writeStream.format("delta").queryName(f"ss-fetch-{p.uid}").outputMode("append")
            .option("checkpointLocation", p.checkpoint("fetch")).trigger(processingTime=p.trigger)
            .start(str(p.sink)))

    def cleanup(self) -> None:
        self.state.drop()
