"""AdCamp on local Spark: which advertising campaign is effective? (Nova, section 3.5)

An update stream says "ad belongs to campaign c from time t"; an event stream says "user viewed ad
at time t" (and clicked or not). Both arrive out of order. One application runs two streaming
queries at once: the update query writes into the State `campaigns`; the fetch-join query enriches
every view with the campaign its ad belonged to *at the view's time* (read-committed: a view waits
until the update progress U has passed it) and appends it to a Delta table. At the end the demo
prints a per-campaign effectiveness table and checks every enriched row against an offline as-of
join over the whole update history.

    python -m sharedstate.demos.adcamp --out demo-output
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import threading
import time
from pathlib import Path

try:
    import pandas as pd
except ImportError as e:  # the core package does not need pandas; the demo does
    raise ImportError("the AdCamp demo needs pandas and pyarrow: pip install 'sharedstate[demo]'") from e

import sharedstate as ss
from sharedstate.demos.report import effectiveness, watch_enrichment
from sharedstate.testing.adcamp import (
    EVENT_SCHEMA,
    UPDATE_SCHEMA,
    accepted_updates,
    expected_late,
    make_workload,
    oracle,
    write_batches,
)


def _parse() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--out", type=Path, default=Path("demo-output"), help="where inputs, checkpoints and Delta go")
    p.add_argument("--ads", type=int, default=100)
    p.add_argument("--events", type=int, default=10_000)
    p.add_argument("--minutes", type=int, default=20, help="event-time span of the generated streams")
    p.add_argument("--seed", type=int, default=42)
    p.add_argument("--pace", type=float, default=0.5, help="seconds between arriving input files")
    p.add_argument("--timeout", type=float, default=600)
    return p.parse_args()


def _delta_rows_written(log_dir: Path, counted: dict[str, int]) -> int:
    """Rows appended so far, from the commit files' metrics (cheap: no Spark job, files are immutable)."""
    for commit in sorted(log_dir.glob("*.json")) if log_dir.is_dir() else []:
        if commit.name not in counted:
            rows = 0
            for line in commit.read_text().splitlines():
                info = json.loads(line).get("commitInfo")
                if info:
                    rows += int(info.get("operationMetrics", {}).get("numOutputRows", 0))
            counted[commit.name] = rows
    return sum(counted.values())


def main() -> int:
    args = _parse()
    out = args.out.resolve()
    shutil.rmtree(out, ignore_errors=True)
    work = make_workload(
        args.seed,
        keys=args.ads,
        changes_per_key=10,
        events=args.events,
        horizon_s=args.minutes * 60,
        window_s=30,
        lateness_s=20,
    )
    print(
        f"AdCamp: {len(work.updates)} campaign updates and {len(work.events)} views over "
        f"{args.minutes} minutes of event time, arriving out of order in "
        f"{len(work.update_batches)} + {len(work.event_batches)} files",
        flush=True,
    )

    spark = ss.session("adcamp")
    campaigns = ss.State.create(
        spark, "campaigns", key="ad_id STRING", value="campaign STRING", rule="replace", partitions=8
    )

    # The sources deliver files over time, like a live feed.
    start = time.time() - 10_000
    feeders = [
        threading.Thread(target=write_batches, args=(out / "in" / name, frames, start, args.pace), daemon=True)
        for name, frames in (("updates", work.update_batches), ("views", work.event_batches))
    ]
    for f in feeders:
        f.start()
    (out / "in" / "updates").mkdir(parents=True, exist_ok=True)
    (out / "in" / "views").mkdir(parents=True, exist_ok=True)

    updates = (
        spark.readStream.schema(UPDATE_SCHEMA).option("maxFilesPerTrigger", 1).parquet(str(out / "in" / "updates"))
    )
    # One file per batch for the updates: which ones are late (below U on arrival) then depends only on
    # the files, so the demo can compute the same set offline and check it.
    update_query = (
        updates.writeStream.format("sharedstate")
        .queryName("campaign-updates")
        .option("state", "campaigns")
        .option("key", "ad_id")
        .option("time", "ts")
        .option("value", "campaign")
        .option("lateness", "20 seconds")
        .option("checkpointLocation", str(out / "checkpoints" / "updates"))
        .trigger(processingTime="500 milliseconds")
        .start()
    )

    # Fetch-join answers do not depend on batch boundaries, so the views may come in bigger batches.
    views = spark.readStream.schema(EVENT_SCHEMA).option("maxFilesPerTrigger", 8).parquet(str(out / "in" / "views"))
    enriched = ss.fetch_join(views, campaigns, key="ad_id", time="ts", rule="latest", mode="committed", how="left")
    delta_path = str(out / "enriched")
    fetch_query = (
        enriched.writeStream.format("delta")
        .queryName("views-with-campaign")
        .outputMode("append")
        .option("checkpointLocation", str(out / "checkpoints" / "views"))
        .trigger(processingTime="500 milliseconds")
        .start(delta_path)
    )

    counted: dict[str, int] = {}  # rows written per Delta commit
    if not watch_enrichment(
        (update_query, fetch_query),
        campaigns,
        len(work.events),
        lambda: _delta_rows_written(out / "enriched" / "_delta_log", counted),
        args.timeout,
    ):
        return 1

    # Each query finishes what its source holds first, so a stop never cuts a running batch short
    # (Spark then logs the batch's tasks as lost).
    for query in (fetch_query, update_query):
        query.processAllAvailable()
    fetch_query.stop()
    update_query.stop()
    result = spark.read.format("delta").load(delta_path).toPandas()

    print("\nCampaign effectiveness (views attributed to the campaign their ad belonged to at view time):")
    print(effectiveness(result).to_string())

    late = expected_late(work)
    expected = oracle(work.events, accepted_updates(work), time_column=campaigns.time_column)
    cols = ["event_id", "campaign", campaigns.time_column]
    got = result[cols].sort_values("event_id").reset_index(drop=True)
    want = expected[cols].sort_values("event_id").reset_index(drop=True)
    for frame in (got, want):
        frame[campaigns.time_column] = pd.to_datetime(frame[campaigns.time_column], utc=True).astype(
            "datetime64[us, UTC]"
        )
        frame["campaign"] = frame["campaign"].astype(object).where(frame["campaign"].notna(), None)
    ok = len(result) == result["event_id"].nunique() == len(work.events) and got.equals(want)
    print(
        f"\n{len(late)} late updates were rejected and kept in the late-updates table "
        f"({campaigns.late_updates().count()} listed)."
    )
    print(
        f"Check against the offline as-of join over the whole update history: "
        f"{'all ' + str(len(got)) + ' rows match' if ok else 'MISMATCH'}"
    )
    spark.stop()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
