"""End-to-end latency of the AdCamp enrichment on Kafka: a view written to a topic -> the view
enriched with its ad's campaign as of its time, readable in another topic.

Four ways, each at every view rate, in one run on one local broker and one Spark application:

- ``realtime``: the update query writes the State with ``ss.updater`` and the view query calls
  ``sharedstate_fetch`` (read-committed), both with ``trigger(realTime=...)``;
- ``continuous``: the ``sharedstate`` sink and ``fetch_join(continuous=True)``, continuous trigger;
- ``microbatch``: the ``sharedstate`` sink and ``fetch_join``, micro-batches;
- ``stream-stream``: the best Spark-native peer of benchmarks/adcamp, a stream-stream join with a
  time range reduced to the latest update per view, micro-batches, append mode.

Latency of a view: the output record's Kafka timestamp (set by Spark's producer when it sends the
row) minus the view's event time, which the feeder sets to the wall clock when it sends the view
(one clock: one machine). Updates come at a fixed rate from the same feeder, in time order (lateness
0), so U passes a view a few milliseconds after it was sent. The first ``--warmup`` seconds of each
point are left out.

    .venv/bin/python benchmarks/latency/end_to_end.py --out benchmarks/results/latency
"""

from __future__ import annotations

import argparse
import collections
import json
import multiprocessing as mp
import os
import platform
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "python"))

from pyspark.sql import functions as F  # noqa: E402

import sharedstate as ss  # noqa: E402
from sharedstate.testing.kafka import KafkaBroker, kafka_libs  # noqa: E402

UPDATE_JSON = "ad_id STRING, ts_us BIGINT, campaign STRING"
VIEW_JSON = "event_id BIGINT, ad_id STRING, ts_us BIGINT"
MODES = ("realtime", "realtime-lanes", "realtime-no-state", "continuous", "microbatch", "stream-stream")
LANES = "spark.sharedstate.realtime.deliveryLanes"
ADS = 100


def feed(
    bootstrap: str, updates: str, views: str, view_rate: int, update_rate: int, seconds: float, linger_ms: int, ready
) -> dict:
    """Views at `view_rate`/s and updates at `update_rate`/s, event time = wall clock at send."""
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, linger_ms=linger_ms, batch_size=65536)
    ready.wait()
    start = time.time()
    sent_v = sent_u = 0
    while True:
        now = time.time()
        elapsed = now - start
        if elapsed >= seconds:
            break
        # each record's event time is the wall clock just before its send
        while sent_u < elapsed * update_rate:
            ad = f"ad{sent_u % ADS}"
            now_us = int(time.time() * 1e6)
            producer.send(updates, json.dumps({"ad_id": ad, "ts_us": now_us, "campaign": f"c{sent_u}"}).encode())
            sent_u += 1
        while sent_v < elapsed * view_rate:
            ad = f"ad{(sent_v * 7) % ADS}"
            now_us = int(time.time() * 1e6)
            producer.send(views, json.dumps({"event_id": sent_v, "ad_id": ad, "ts_us": now_us}).encode())
            sent_v += 1
        time.sleep(0.001)
    # U must pass the last views: a last round of updates a little later.
    time.sleep(0.05)
    last_us = int(time.time() * 1e6)
    for a in range(ADS):
        producer.send(updates, json.dumps({"ad_id": f"ad{a}", "ts_us": last_us, "campaign": "end"}).encode())
    producer.flush(60)
    producer.close()
    return {"views": sent_v, "updates": sent_u}


def read_topic(spark, bootstrap: str, topic: str, schema: str):
    """The topic's records; `in_us` is the broker's append time (input topics use LogAppendTime)."""
    return (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .option("startingOffsets", "earliest")
        .load()
        .select(
            F.from_json(F.col("value").cast("string"), schema).alias("r"), F.unix_micros("timestamp").alias("in_us")
        )
        .select("r.*", "in_us")
        .withColumn("ts", F.timestamp_micros("ts_us"))
    )


# The JVM's wall clock where a row passes (reflect is evaluated per row, in projection order).
NOW_MS = "reflect('java.lang.System', 'currentTimeMillis')"


def to_kafka(df, bootstrap: str, topic: str, checkpoint: Path):
    stamps = [c for c in ("in_us", "read_ms", "fetched_ms") if c in df.columns]
    out = df.select(
        F.col("event_id").cast("string").alias("key"),
        F.to_json(F.struct("event_id", "ts_us", "campaign", *stamps)).alias("value"),
    )
    return (
        out.writeStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("topic", topic)
        .option("checkpointLocation", str(checkpoint))
    )


def start(mode: str, spark, bootstrap: str, topics: dict, state: str, work: Path, args) -> list:
    updates = read_topic(spark, bootstrap, topics["updates"], UPDATE_JSON)
    views = read_topic(spark, bootstrap, topics["views"], VIEW_JSON)
    if mode == "stream-stream":
        u = updates.select(F.col("ad_id").alias("u_ad"), F.col("ts").alias("uts"), "campaign").withWatermark(
            "uts", "0 seconds"
        )
        v = views.withWatermark("ts", "0 seconds")
        cond = (F.col("ad_id") == F.col("u_ad")) & (F.col("uts") <= F.col("ts"))
        cond = cond & (F.col("uts") >= F.col("ts") - F.expr(f"INTERVAL {args.range_ms} MILLISECONDS"))
        latest = (
            v.join(u, cond, "leftOuter")
            .groupBy("event_id", "ts_us", "ts")
            .agg(F.max_by("campaign", "uts").alias("campaign"))
        )
        q = (
            to_kafka(latest, bootstrap, topics["out"], work / "ck-join")
            .outputMode("append")
            .trigger(processingTime=args.batch)
            .start()
        )
        return [q]
    if mode == "realtime-no-state":
        # the floor: the same view query in real-time mode without the State (no updater, no fetch):
        # Spark's real-time mode and Kafka's hops on this machine, what no plugin can go below
        plain = views.select(
            "*", F.expr(NOW_MS).cast("long").alias("read_ms"), F.lit(None).cast("string").alias("campaign")
        )
        plain = plain.withColumn("fetched_ms", F.expr(NOW_MS).cast("long"))
        reader = to_kafka(plain, bootstrap, topics["out"], work / "ck-v")
        return [reader.outputMode("update").trigger(realTime=args.epoch).start()]
    ss.State.create(spark, state, key="ad_id STRING", value="campaign STRING", partitions=4)
    if mode.startswith("realtime"):
        # realtime-lanes: the updater's flushes and the waiting fetches go through the delivery lanes
        # (the setting is read when the updater is made and when the fetch is planned)
        spark.conf.set(LANES, str(mode == "realtime-lanes").lower())
        writer = (
            updates.writeStream.foreach(ss.updater(spark, state, key="ad_id", time="ts", value="campaign"))
            .outputMode("update")
            .trigger(realTime=args.epoch)
            .option("checkpointLocation", str(work / "ck-u"))
            .start()
        )
        # read_ms before the fetch, fetched_ms after it (it depends on the answer, so it is evaluated later)
        enriched = views.select(
            "*",
            F.expr(NOW_MS).cast("long").alias("read_ms"),
            F.expr(f"sharedstate_fetch('{state}', ad_id, ts).campaign").alias("campaign"),
        ).withColumn("fetched_ms", F.expr(f"if(campaign is null, {NOW_MS}, {NOW_MS})").cast("long"))
        reader = to_kafka(enriched, bootstrap, topics["out"], work / "ck-v")
        queries = [writer, reader.outputMode("update").trigger(realTime=args.epoch).start()]
        spark.conf.unset(LANES)
        return queries
    sink = (
        updates.writeStream.format("sharedstate")
        .option("state", state)
        .option("key", "ad_id")
        .option("time", "ts")
        .option("value", "campaign")
        .option("checkpointLocation", str(work / "ck-u"))
    )
    continuous = mode == "continuous"
    enriched = ss.fetch_join(views, state, key="ad_id", time="ts", continuous=continuous)
    reader = to_kafka(enriched, bootstrap, topics["out"], work / "ck-v")
    if continuous:
        every = {"continuous": args.epoch_continuous}
    else:
        every = {"processingTime": args.batch}
    return [sink.trigger(**every).start(), reader.trigger(**every).start()]


def point(spark, kafka, mode: str, rate: int, args, n: int) -> dict:
    name = f"lat{n}_{mode.replace('-', '_')}_{rate}"
    topics = {k: f"{name}-{k}" for k in ("updates", "views", "out")}
    for t in topics.values():
        # every topic stamps each record with the broker's append time: on the input topics the
        # breakdown's second clock, on the output topic the moment the enriched view is readable
        kafka.create_topic(t, partitions=1, configs={"message.timestamp.type": "LogAppendTime"})
    work = Path(args.work) / name
    queries = start(mode, spark, kafka.bootstrap, topics, name, work, args)
    if args.feeder == "java":
        feeder = subprocess.Popen(
            [
                "java",
                "-XX:+UseSerialGC",
                "-Xmx256m",
                *pause_log(args, f"feeder-{name}"),
                "-cp",
                str(kafka_libs() / "*"),
                str(HERE / "Feeder.java"),
                *map(str, (kafka.bootstrap, topics["updates"], topics["views"], rate, args.update_rate)),
                *map(str, (args.seconds, args.linger_ms, ADS)),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        if feeder.stdout.readline().strip() != "ready":
            raise RuntimeError("the Java feeder did not start")
        live(kafka, topics, args.startup)  # the queries answer a probe view before the feed starts
        fed_from = time.time()
        feeder.stdin.write("go\n")
        feeder.stdin.flush()
        out, _ = feeder.communicate(timeout=args.seconds + 120)
        sent = json.loads(out.strip().splitlines()[-1])
    else:
        ctx = mp.get_context("spawn")
        ready = ctx.Event()
        reader_out, writer_out = ctx.Pipe(duplex=False)
        feed_args = (kafka.bootstrap, topics["updates"], topics["views"], rate, args.update_rate, args.seconds)
        feeder = ctx.Process(target=_feed_child, args=(*feed_args, args.linger_ms, ready, writer_out))
        feeder.start()
        live(kafka, topics, args.startup)  # the queries answer a probe view before the feed starts
        fed_from = time.time()
        ready.set()
        feeder.join()
        sent = reader_out.recv()
    deadline = time.time() + args.drain
    got = []
    while time.time() < deadline:
        for q in queries:
            if q.exception() is not None:
                raise RuntimeError(f"{mode} at {rate}/s: {q.exception()}")
        got = kafka.consume(topics["out"])
        if len({r.key for r in got} - {b"-1"}) >= sent["views"]:
            break
        time.sleep(1)
    # real-time epochs that started while the measured views were fed (each restarts the tasks)
    window = (fed_from + args.warmup, fed_from + args.seconds)
    epoch_starts = sorted(
        {
            (q.name or str(q.id), p["timestamp"])
            for q in (queries if mode.startswith("realtime") else [])
            for p in q.recentProgress
            if window[0] <= iso_seconds(p["timestamp"]) <= window[1]
        }
    )
    for q in queries:
        q.stop()
    lat, first_ms = [], None
    for r in got:
        v = json.loads(r.value)
        if v["event_id"] >= 0 and (first_ms is None or v["ts_us"] / 1000 < first_ms):
            first_ms = v["ts_us"] / 1000
    seen, timeline, measured = set(), [], []
    for r in got:
        v = json.loads(r.value)
        if v["event_id"] in seen or v["event_id"] < 0:  # a copy, or a probe
            continue
        seen.add(v["event_id"])
        since_ms = v["ts_us"] / 1000 - first_ms
        if since_ms >= args.warmup * 1000:
            lat.append(r.timestamp - v["ts_us"] / 1000)
            timeline.append((since_ms / 1000, lat[-1]))
            measured.append((v, r.timestamp))
    timeline.sort()
    lat = np.array(sorted(lat))
    delivered = len(seen)
    result = {
        "mode": mode,
        "rate": rate,
        "views_sent": sent["views"],
        "updates_sent": sent["updates"],
        "views_delivered": delivered,
        "measured": int(lat.size),
        "epochs_started_while_measured": len(epoch_starts),
    }
    if args.pause_logs:
        result["pauses"] = pauses(Path(args.pause_logs), name, window)
    if lat.size:
        result.update({f"p{q}": float(np.percentile(lat, q)) for q in (50, 99, 99.9)})
        result["max"] = float(lat[-1])
        result["cdf"] = [float(x) for x in np.percentile(lat, np.linspace(0, 100, 201))]
        # latency over the run: the view's send time (s since the first view) and its latency, 1 in 50
        result["timeline"] = [[round(t, 3), round(ms, 1)] for t, ms in timeline[::50]]
    offered = sent["views"] >= 0.9 * rate * args.seconds  # the feeder itself kept the rate
    result["sustained"] = offered and sustained(delivered, sent["views"], timeline)
    if measured and "read_ms" in measured[0][0]:
        ups = kafka.consume(topics["updates"]) if mode != "realtime-no-state" else []  # nothing waits for U there
        result["breakdown"] = breakdown(measured, ups)
    print(json.dumps({k: v for k, v in result.items() if k not in ("cdf", "timeline")}), flush=True)
    return result


def sustained(delivered: int, sent: int, timeline: list) -> bool:
    """The pipeline kept up with an offered rate: every view came out, and latency did not grow over the run (the last
    third's median at most twice the first third's, plus 100 ms): a backlog grows it without bound."""
    if delivered < sent or len(timeline) < 30:
        return False
    third = len(timeline) // 3
    first = float(np.median([ms for _, ms in timeline[:third]]))
    last = float(np.median([ms for _, ms in timeline[-third:]]))
    return last <= 2 * first + 100


STAGES = (
    ("view: feeder -> broker", "send to the broker's append (producer batching, the feeder's own lag)"),
    ("view: broker -> Spark task", "append to the real-time task's row (the Kafka source's poll)"),
    ("view: fetch wait", "the row waits in sharedstate_fetch until U passes its time"),
    ("view: fetch -> output appended", "the answer to the output record's append (the Kafka sink's send, its hop)"),
    ("update: feeder -> broker", "the update that lets U pass the view: its send to its append"),
    ("update: broker -> fetch wakes", "its append to the view's fetch answering (read, flush, commit, U)"),
)


def breakdown(measured: list, update_records: list) -> dict:
    """Per stage of a view's path, p50/p99/p99.9 in ms, from the clocks the records carry: the view's
    event time (feeder, at send), its broker append time, the JVM's clock before and after the fetch,
    the output record's timestamp; and, for the update whose time first exceeds the view's (the one U
    waits for), its event time and broker append time."""
    ups = sorted((json.loads(r.value)["ts_us"], r.timestamp * 1000) for r in update_records)
    up_ts = np.array([u[0] for u in ups])
    stages = {name: [] for name, _ in STAGES}
    for v, out_ms in measured:
        ts_ms, in_ms = v["ts_us"] / 1000, v["in_us"] / 1000
        stages["view: feeder -> broker"].append(in_ms - ts_ms)
        stages["view: broker -> Spark task"].append(v["read_ms"] - in_ms)
        stages["view: fetch wait"].append(v["fetched_ms"] - v["read_ms"])
        stages["view: fetch -> output appended"].append(out_ms - v["fetched_ms"])
        i = int(np.searchsorted(up_ts, v["ts_us"], side="right"))
        if i < len(ups):
            u_ts, u_in = ups[i][0] / 1000, ups[i][1] / 1000
            stages["update: feeder -> broker"].append(u_in - u_ts)
            stages["update: broker -> fetch wakes"].append(v["fetched_ms"] - u_in)
    return {name: {f"p{q}": float(np.percentile(xs, q)) for q in (50, 99, 99.9)} for name, xs in stages.items() if xs}


def iso_seconds(text: str) -> float:
    """Seconds since the epoch of a progress event's ISO timestamp (UTC, with a trailing Z)."""
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def pause_log(args, jvm: str) -> list[str]:
    """JVM options that log every stop-the-world pause (safepoint) with its wall-clock time."""
    if not args.pause_logs:
        return []
    Path(args.pause_logs).mkdir(parents=True, exist_ok=True)
    # (and the collector's log: a concurrent collector that falls behind stalls allocating threads
    # without a safepoint, "Allocation Stall" there)
    return [
        f"-Xlog:safepoint:file={Path(args.pause_logs) / jvm}.log:time",
        f"-Xlog:gc:file={Path(args.pause_logs) / jvm}.gc.log:time",
    ]


def pauses(logs: Path, point: str, window: tuple) -> dict:
    """Per JVM (driver, broker, this point's feeder): the stop-the-world pauses that began inside the
    window: count, total, p50/p99/max in ms (safepoint lines: reaching it plus time at it)."""
    import re
    from datetime import datetime

    line = re.compile(r"^\[(\S+)\].*Total: (\d+) ns")
    stall = re.compile(r"^\[(\S+)\].*Allocation Stall .* ([0-9.]+)ms")
    out = {}
    for jvm in ("driver", "broker", f"feeder-{point}"):
        path = logs / f"{jvm}.log"
        if not path.is_file():
            continue
        ms = []
        for text in path.read_text(errors="replace").splitlines():
            m = line.match(text)
            if m and window[0] <= datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp() <= window[1]:
                ms.append(int(m.group(2)) / 1e6)
        key = jvm.split("-")[0]
        stalls = []
        gc_log = logs / f"{jvm}.gc.log"
        for text in gc_log.read_text(errors="replace").splitlines() if gc_log.is_file() else []:
            m = stall.match(text)
            if m and window[0] <= datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f%z").timestamp() <= window[1]:
                stalls.append(float(m.group(2)))
        if ms:
            out[key] = {
                "count": len(ms),
                "total_ms": round(sum(ms), 1),
                "p50_ms": round(float(np.percentile(ms, 50)), 2),
                "p99_ms": round(float(np.percentile(ms, 99)), 2),
                "max_ms": round(max(ms), 2),
            }
        else:
            out[key] = {"count": 0}
        out[key]["allocation_stalls"] = len(stalls)
        out[key]["allocation_stall_max_ms"] = round(max(stalls), 2) if stalls else 0.0
    return out


def live(kafka, topics: dict, timeout: float) -> None:
    """Sends probe updates and a probe view (event -1) until the view comes out enriched: real-time and
    continuous queries start their long-running tasks some seconds after start(), micro-batches
    their first batch; the feed starts once the pipeline answers, so no start-up backlog is measured."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        now_us = int(time.time() * 1e6)
        kafka.produce(topics["views"], [json.dumps({"event_id": -1, "ad_id": "ad0", "ts_us": now_us})])
        kafka.produce(
            topics["updates"],
            [json.dumps({"ad_id": f"ad{a}", "ts_us": now_us + 1000, "campaign": "probe"}) for a in range(ADS)],
        )
        time.sleep(1)
        if kafka.end_offsets(topics["out"]).get(0, 0) > 0:
            return
    raise RuntimeError(f"no probe view came out of {topics['out']} within {timeout} s")


def _feed_child(bootstrap, updates, views, rate, update_rate, seconds, linger_ms, ready, out):
    out.send(feed(bootstrap, updates, views, rate, update_rate, seconds, linger_ms, ready))


class FastBroker(KafkaBroker):
    """The test broker with the JVM of a long-running one: full JIT (the test broker stops at C1 for a
    fast start) and a larger heap, so its appends do not add their own stalls to the latency; `jvm`
    replaces its collector (the test broker's serial one) and logs its pauses."""

    def __init__(self, jvm: list[str]):
        super().__init__(heap="1g")
        self.jvm = jvm

    def _java(self, main: str, *args: str) -> list[str]:
        java = [a for a in super()._java(main, *args) if a != "-XX:TieredStopAtLevel=1"]
        if main != "kafka.Kafka":
            return java
        if any(a.startswith("-XX:+Use") and a.endswith("GC") for a in self.jvm):
            java = [a for a in java if a != "-XX:+UseSerialGC"]
        return [java[0], *self.jvm, *java[1:]]


def summarise(runs: list, rates: list, modes: list, ladder: list) -> list:
    """Per rate and mode: the medians over the runs, the p99 spread, the median run's CDF and breakdown,
    and the highest sustained rate (the rates of the runs and of the ladder it kept up with)."""
    points = []
    for rate in rates:
        for mode in modes:
            rs = sorted((r for r in runs if r["rate"] == rate and r["mode"] == mode), key=lambda r: r.get("p99", 1e12))
            median = rs[len(rs) // 2]
            point = {k: median[k] for k in ("mode", "rate", "cdf", "timeline", "breakdown", "pauses") if k in median}
            point["epochs_started_while_measured"] = [r.get("epochs_started_while_measured", 0) for r in rs]
            for k in ("p50", "p99", "p99.9", "max"):
                xs = [r[k] for r in rs if k in r]
                if xs:
                    point[k] = float(np.median(xs))
                    point[f"{k}_min"], point[f"{k}_max"] = min(xs), max(xs)
            point["views_sent"] = sum(r["views_sent"] for r in rs)
            point["views_delivered"] = sum(r["views_delivered"] for r in rs)
            point["sustained"] = all(r["sustained"] for r in rs)
            points.append(point)
    for mode in modes:
        kept = [r["rate"] for r in runs if r["mode"] == mode and r["sustained"]]
        kept += [r["rate"] for r in ladder if r["mode"] == mode and r["sustained"]]
        for point in points:
            if point["mode"] == mode:
                point["highest_sustained"] = max(kept) if kept else None
    return points


def report(out: Path, data: dict) -> None:
    rows = [
        "| events/s | mode | p50 ms | p99 ms (min-max) | p99.9 ms | max ms | delivered / sent | highest sustained |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in data["points"]:
        ms = [f"{r[k]:,.1f}" if k in r else "-" for k in ("p50", "p99", "p99.9", "max")]
        if "p99" in r:
            ms[1] += f" ({r['p99_min']:,.1f}-{r['p99_max']:,.1f})"
        top = f"{r['highest_sustained']:,}/s" if r.get("highest_sustained") else "-"
        rows.append(
            f"| {r['rate']:,} | {r['mode']} | {' | '.join(ms)} | {r['views_delivered']:,} / {r['views_sent']:,} "
            f"| {top} |"
        )
    rows += ["", "Where a real-time view's time goes (the median run's, ms):", ""]
    for r in data["points"]:
        if "breakdown" in r:
            rows += [
                f"{r['rate']:,} views/s, {r['mode']}:",
                "",
                "| stage | p50 | p99 | p99.9 |",
                "| --- | --- | --- | --- |",
            ]
            rows += [
                f"| {stage} | {v['p50']:.1f} | {v['p99']:.1f} | {v['p99.9']:.1f} |"
                for stage, v in r["breakdown"].items()
            ]
            rows.append("")
    if any("pauses" in r for r in data["points"]):
        rows += [
            "Stop-the-world pauses (safepoints) that began while the median run's views were measured, per JVM "
            "(count, p99 / max / total ms), and the real-time epochs that started meanwhile (each run's):",
            "",
            "| events/s | mode | driver | broker | feeder | epochs started |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for r in data["points"]:
            cells = []
            for jvm in ("driver", "broker", "feeder"):
                x = r.get("pauses", {}).get(jvm, {})
                cell = f"{x['count']}: {x['p99_ms']} / {x['max_ms']} / {x['total_ms']}" if x.get("count") else "-"
                if x.get("allocation_stalls"):
                    cell += f"; {x['allocation_stalls']} allocation stalls, max {x['allocation_stall_max_ms']}"
                cells.append(cell)
            epochs = ", ".join(map(str, r.get("epochs_started_while_measured", []))) if "realtime" in r["mode"] else "-"
            rows.append(f"| {r['rate']:,} | {r['mode']} | {' | '.join(cells)} | {epochs} |")
        rows.append("")
    loads = ", ".join(f"{a:.1f} -> {b:.1f}" for a, b in data["loads"])
    head = [
        "# End-to-end latency: view into Kafka -> enriched view readable in Kafka",
        "",
        *[f"`{c}`" for c in data["commands"]],
        "",
        f"Machine: {data['machine']}; 1-minute load average before -> after each invocation: {loads}. {data['setup']}",
        "",
        "Latency = the output record's broker append time (the output topic uses LogAppendTime) minus the "
        "view's event time (the feeder's wall clock "
        f"when it sent the view), after {data['warmup_s']} s of warm-up, every view once (the first copy). "
        "The feed starts once the queries answered a probe view. Each point ran "
        f"{data['runs']} times: medians over the runs, the p99's spread in brackets. Highest sustained: the "
        "highest rate (of these and of a ladder of shorter runs) at which every view came out and the "
        "latency did not grow over the run.",
        "",
    ]
    (out / "table.md").write_text("\n".join(head + rows) + "\n")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(data["rates"]), figsize=(6 * len(data["rates"]), 4.5), squeeze=False)
    for ax, rate in zip(axes[0], data["rates"]):
        for r in data["points"]:
            if r["rate"] == rate and "cdf" in r:
                ax.plot(r["cdf"], np.linspace(0, 1, len(r["cdf"])), label=r["mode"])
        ax.set_xscale("log")
        ax.set_xlabel("latency (ms, log)")
        ax.set_ylabel("fraction of views")
        ax.set_title(f"{rate:,} views/s")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
    fig.tight_layout()
    fig.savefig(out / "cdf.png", dpi=110)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", default="benchmarks/results/latency")
    p.add_argument("--work", default="/tmp/sharedstate-latency")
    p.add_argument("--rates", default="1000,10000")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--update-rate", type=int, default=500)
    p.add_argument("--seconds", type=float, default=20)
    p.add_argument("--warmup", type=float, default=5)
    p.add_argument("--startup", type=float, default=90, help="longest wait for the queries to answer a probe")
    p.add_argument("--drain", type=float, default=30)
    p.add_argument("--epoch", default="5 seconds", help="real-time epoch (checkpoint cadence)")
    p.add_argument("--epoch-continuous", default="1 second")
    p.add_argument("--batch", default="100 milliseconds", help="micro-batch trigger")
    p.add_argument("--range-ms", type=int, default=2000, help="stream-stream join: update range")
    p.add_argument("--master", default="local[4]")
    p.add_argument("--linger-ms", type=int, default=0, help="the feeder's producer linger.ms")
    p.add_argument("--feeder", choices=("java", "python"), default="java", help="Feeder.java or kafka-python")
    p.add_argument("--runs", type=int, default=3, help="runs of every point: medians and spread")
    p.add_argument("--ladder", default="20000,40000,80000", help="rates above --rates for the highest sustained rate")
    p.add_argument("--ladder-seconds", type=float, default=15)
    p.add_argument("--pause-logs", default="", help="a directory: log every JVM's stop-the-world pauses there")
    p.add_argument("--driver-jvm", default="", help="extra JVM options of the Spark driver (local mode: every task)")
    p.add_argument("--broker-jvm", default="", help="extra JVM options of the broker (a collector replaces Serial)")
    p.add_argument("--warm-seconds", type=float, default=15, help="an unrecorded point of each mode first; 0: none")
    p.add_argument("--part", default="all", help="name of this invocation's runs; --out merges every part in it")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    rates = [int(r) for r in args.rates.split(",")]
    modes = args.modes.split(",")
    from sharedstate._jars import conf_file

    driver_jvm = [f"-Dlog4j2.configurationFile=file:{conf_file('log4j2.properties')}", *args.driver_jvm.split()]
    driver_jvm += pause_log(args, "driver")
    spark = ss.session(
        "latency",
        master=args.master,
        kafka=True,
        **{"spark.sql.shuffle.partitions": "2", "spark.driver.extraJavaOptions": " ".join(driver_jvm)},
    )
    spark.sparkContext.setLogLevel("ERROR")
    runs, ladder = [], []
    load_before = os.getloadavg()[0]
    with FastBroker([*args.broker_jvm.split(), *pause_log(args, "broker")]) as kafka:
        n = 0
        # A fresh JVM compiles Spark's, Kafka's and the plugin's paths as they first run: on the loaded
        # 2-core machine that took up to 20 s of backlog in a first real-time point. Each mode runs once
        # unrecorded first, so every recorded point meets a warm JVM (as a long-running job would).
        warm = argparse.Namespace(**{**vars(args), "seconds": args.warm_seconds, "pause_logs": ""})
        for mode in modes if args.warm_seconds > 0 else []:
            n += 1
            point(spark, kafka, mode, rates[0], warm, n)
        for run in range(args.runs):
            for rate in rates:
                for mode in modes:
                    n += 1
                    runs.append(dict(point(spark, kafka, mode, rate, args, n), run=f"{args.part}:{run}"))
        # the highest sustained rate: each mode climbs the ladder (one shorter run a rung) until it falls behind
        climb = argparse.Namespace(**{**vars(args), "seconds": args.ladder_seconds})
        for mode in modes:
            for rate in [int(r) for r in args.ladder.split(",") if r]:
                n += 1
                rung = point(spark, kafka, mode, rate, climb, n)
                ladder.append({k: v for k, v in rung.items() if k not in ("cdf", "timeline")})
                if not rung["sustained"]:
                    break
    spark.stop()
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    part = {
        "command": shlex.join([".venv/bin/python", "benchmarks/latency/end_to_end.py", *sys.argv[1:]]),
        "load_before": load_before,
        "load_after": os.getloadavg()[0],
        "setup": (
            f"Spark 4.2.0 {args.master}, one partition per topic, {ADS} ads, updates at {args.update_rate}/s, "
            f"{args.seconds:.0f} s per point; real-time epoch {args.epoch}, continuous epoch "
            f"{args.epoch_continuous}, micro-batch trigger {args.batch}; driver JVM options "
            f"'{args.driver_jvm or '-'}' (G1 unless they name another collector, heap "
            f"{spark_conf_default('spark.driver.memory')}), broker '{args.broker_jvm or '-XX:+UseSerialGC'}' "
            f"(1 GB heap); commit {commit}."
        ),
        "runs": runs,
        "ladder": ladder,
    }
    (out / f"part-{args.part}.json").write_text(json.dumps(part))
    merge(out, rates, modes, args.warmup)


def spark_conf_default(key: str) -> str:
    from sharedstate._jars import conf_file

    for text in conf_file("spark-defaults.conf").read_text().splitlines():
        if text.split() and text.split()[0] == key:
            return text.split()[1]
    return "?"


def merge(out: Path, rates: list, modes: list, warmup: float) -> None:
    """Summarises every part in `out` (one per invocation: a benchmark hold is at most ~30 min, so the
    runs of one result may come from several invocations of the same command)."""
    parts = [json.loads(p.read_text()) for p in sorted(out.glob("part-*.json"))]
    runs = [r for p in parts for r in p["runs"]]
    ladder = [r for p in parts for r in p["ladder"]]
    # every part's modes and rates, not only this invocation's (a part may run others)
    modes = [m for m in MODES if m in modes or any(r["mode"] == m for r in runs)]
    rates = sorted(set(rates) | {r["rate"] for r in runs})
    points = summarise(runs, rates, modes, ladder)
    data = {
        "commands": [p["command"] for p in parts],
        "machine": f"{os.cpu_count()} cores, {platform.platform()}",
        "loads": [[p["load_before"], p["load_after"]] for p in parts],
        "setup": parts[-1]["setup"],
        "warmup_s": warmup,
        "rates": rates,
        "runs": max(collections.Counter((r["mode"], r["rate"]) for r in runs).values()),  # runs of a point
        "points": points,
        "ladder": ladder,
        "every_run": [{k: v for k, v in r.items() if k not in ("cdf", "timeline")} for r in runs],
    }
    (out / "results.json").write_text(json.dumps(data, indent=1))
    report(out, data)


if __name__ == "__main__":
    main()
