"""What both AdCamp demos print while they run and at the end: progress and campaign effectiveness."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence

import pandas as pd
from pyspark.sql.streaming import StreamingQuery

import sharedstate as ss


def watch_enrichment(
    queries: Sequence[StreamingQuery], state: ss.State, total: int, rows_written: Callable[[], int], timeout: float
) -> bool:
    """Prints the State's progress every 2 s until `total` views are enriched; False on a failed query or timeout."""
    deadline = time.monotonic() + timeout
    emitted = 0
    while emitted < total:
        for q in queries:
            if q.exception() is not None:
                print(f"query {q.name} failed: {q.exception()}", file=sys.stderr)
                return False
        if time.monotonic() > deadline:
            print(f"timed out with {emitted} of {total} views enriched", file=sys.stderr)
            return False
        time.sleep(2)
        emitted = rows_written()
        p = state.progress()
        u = p["update"].strftime("%H:%M:%S") if p["update"] else "-inf"
        print(
            f"  U={u}  updates applied={p['updates_applied']:>5} waiting={p['updates_waiting']:>3} "
            f"late={p['updates_rejected']:>3}  views enriched={emitted:>6}/{total}",
            flush=True,
        )
    return True


def effectiveness(enriched: pd.DataFrame) -> pd.DataFrame:
    """Views, clicks and click-through rate per campaign, the ad's campaign at view time."""
    enriched = enriched.assign(campaign=enriched["campaign"].fillna("(no campaign)"))
    table = enriched.groupby("campaign").agg(
        views=("event_id", "count"), clicks=("clicked", "sum"), ads=("ad_id", "nunique"), users=("user_id", "nunique")
    )
    table["ctr_%"] = (100.0 * table["clicks"] / table["views"]).round(2)
    return table.sort_values(["ctr_%", "views"], ascending=False)
