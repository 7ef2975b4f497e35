"""Fetch joins: enrich a stream with a State's value as of each row's event time."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame

from sharedstate._jvm import fetch_join_entry
from sharedstate.errors import translated
from sharedstate.state import State


def fetch_join(
    events: DataFrame,
    state: str | State,
    key: str | Sequence[str],
    time: str,
    rule: str = "latest",
    mode: str = "committed",
    how: str = "left",
    poll_interval_ms: int = 100,
    staleness: str | None = None,
) -> DataFrame:
    """Joins each event with the State's value at the event's time.

    ``key`` names the event column(s) that hold the State's key, in the State's key order; ``time``
    the event-time TIMESTAMP column. With ``rule="latest"`` each event gets the newest value whose
    timestamp is at or before its time, and ``<state>_time``, that value's timestamp.
    ``mode="committed"`` (read-committed) answers an event only once the State's update progress U
    has passed its time, so the answer never changes; until then the event waits in the query's
    checkpointed state and is emitted by a later micro-batch, with or without new input.
    ``mode="uncommitted"`` with ``staleness="10 seconds"`` answers an event once its time minus the
    staleness is below U, from the updates applied by then (bounded staleness, SSP): sooner, but
    updates between U and the event time may be missing from the answer.
    ``how="left"`` keeps events with no value (nulls), ``"inner"`` drops them. Waiting events are
    re-checked every micro-batch; ``poll_interval_ms`` bounds how often.

    Use a processing-time trigger on the query (e.g. ``trigger(processingTime="1 second")``):
    while events wait, every trigger runs a micro-batch to re-check them.
    """
    name = state.name if isinstance(state, State) else state
    keys = [key] if isinstance(key, str) else list(key)
    with translated():
        jdf = fetch_join_entry(events.sparkSession).join(
            events._jdf, name, ",".join(keys), time, rule, mode, how, int(poll_interval_ms), staleness
        )
    return DataFrame(jdf, events.sparkSession)
