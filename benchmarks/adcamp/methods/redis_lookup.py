"""Peer (c): foreachBatch look-ups in Redis, one sorted set per ad scored by update time.

The update query's foreachBatch ZADDs each update (pipelined, from the executors' Python workers),
then raises the progress key P to max(update time) - lateness. The view query's foreachBatch reads
P, answers the views older than P with ZREVRANGEBYSCORE ad:<id> <ts> -inf LIMIT 0 1 (pipelined,
in the executors) and keeps the others waiting for a later batch.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import redis

from methods.base import SINK_SCHEMA, Method
from methods.pending import PendingViews, views_with_heartbeat
from workload import SECOND

PROGRESS_KEY = "adcamp:progress"
CHUNK = 5000  # commands per pipeline round trip


def _micros(ts: pd.Series) -> np.ndarray:
    return ts.to_numpy().astype("datetime64[us]").astype(np.int64)


def _zadd_partitions(port: int):
    def run(frames):
        client = redis.Redis(host="127.0.0.1", port=port)
        n, newest = 0, None
        for frame in frames:
            ads, times, camps = frame["ad_id"].to_numpy(), _micros(frame["ts"]), frame["campaign"].to_numpy()
            for start in range(0, len(frame), CHUNK):
                pipe = client.pipeline(transaction=False)
                for ad, t, c in zip(
                    ads[start : start + CHUNK], times[start : start + CHUNK], camps[start : start + CHUNK]
                ):
                    pipe.zadd(f"ad:{ad}", {f"{t}:{c}": int(t)})
                pipe.execute()
            if len(frame):
                n += len(frame)
                newest = int(times.max()) if newest is None else max(newest, int(times.max()))
        client.close()
        yield pd.DataFrame({"n": [n], "newest": [newest if newest is not None else -1]})

    return run


def _lookup_partitions(port: int):
    def run(frames):
        client = redis.Redis(host="127.0.0.1", port=port)
        for frame in frames:
            ads, times = frame["ad_id"].to_numpy(), _micros(frame["ts"])
            campaign = np.full(len(frame), -1, dtype=np.int64)
            when = np.full(len(frame), -1, dtype=np.int64)
            for start in range(0, len(frame), CHUNK):
                pipe = client.pipeline(transaction=False)
                for ad, t in zip(ads[start : start + CHUNK], times[start : start + CHUNK]):
                    pipe.zrevrangebyscore(f"ad:{ad}", int(t), "-inf", start=0, num=1)
                for i, found in enumerate(pipe.execute(), start):
                    if found:
                        t, c = found[0].split(b":")
                        when[i], campaign[i] = int(t), int(c)
            out = frame[["event_id", "ad_id", "ts", "clicked"]].copy()
            none = campaign < 0  # no update of this ad at or before the view's time
            out["campaign"] = pd.Series(campaign, index=out.index).astype("Int32").mask(none)
            out["campaign_time"] = pd.Series(when.astype("datetime64[us]"), index=out.index).mask(none)
            yield out
        client.close()

    return run


class RedisLookup(Method):
    name = "redis foreachBatch"

    def start(self) -> None:
        p = self.point
        port = p.redis_port
        lateness_us = int(p.shape.lateness_s * SECOND)
        client = redis.Redis(host="127.0.0.1", port=port)
        client.flushall()
        self.client = client
        pending = PendingViews()

        def write_updates(batch, _batch_id):
            stats = batch.mapInPandas(_zadd_partitions(port), "n BIGINT, newest BIGINT").collect()
            newest = max((r["newest"] for r in stats if r["n"]), default=None)
            if newest is not None:
                old = client.get(PROGRESS_KEY)
                progress = newest - lateness_us
                if old is None or int(old) < progress:
                    client.set(PROGRESS_KEY, progress)  # only this query writes P

        def enrich(batch, _batch_id):
            raw = client.get(PROGRESS_KEY)
            ready = pending.split(batch, None if raw is None else int(raw))
            if ready is not None:
                p.append(ready.mapInPandas(_lookup_partitions(port), SINK_SCHEMA))

        self.queries.append(
            p.updates()
            .writeStream.foreachBatch(write_updates)
            .queryName(f"redis-updates-{p.uid}")
            .option("checkpointLocation", p.checkpoint("updates"))
            .trigger(processingTime=p.trigger)
            .start()
        )
        self.queries.append(
            views_with_heartbeat(p)
            .writeStream.foreachBatch(enrich)
            .queryName(f"redis-views-{p.uid}")
            .option("checkpointLocation", p.checkpoint("views"))
            .trigger(processingTime=p.trigger)
            .start()
        )

    def cleanup(self) -> None:
        self.client.flushall()
        self.client.close()
