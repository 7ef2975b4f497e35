"""Fetch joins: enrich a stream with a State's value as of each row's event time."""

from __future__ import annotations

from collections.abc import Sequence

from pyspark.sql import DataFrame

from sharedstate.state import State


def fetch_join(
    events: DataFrame,
    state: str | State,
    key: str | Sequence[str],
    time: str,
    rule: str = "latest",
    mode: str = "committed",
    how: str = "left",
    staleness: str | None = None,
    window: str | None = None,
    continuous: bool = False,
    lateness: str | None = None,
    scope: str | None = None,
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
    ``rule="range"`` with ``window="10 minutes"`` adds ``<state>_range``, an array of
    ``(<state>_time, value columns...)`` structs for the pairs in ``[time - window, time]``, oldest
    first. The aggregates ``sum``, ``min``, ``max``, ``avg`` (columns ``<rule>_<value column>``),
    ``count`` (``<state>_count``) and ``collect`` (``collect_<value column>``) read the same range.
    ``how="left"`` keeps events with no value (nulls; 0 or an empty array for ``count``,
    ``collect`` and ``range``), ``"inner"`` drops them.

    Waiting events stay in the query's checkpoint until U passes them: the join follows the
    State's update progress as a stream, so a micro-batch runs when events arrive or U advances (and
    ``processAllAvailable()`` returns once the input is processed and U has not moved).
    With ``lateness="10 minutes"``, events more than that behind the latest event time seen are
    late: they are not fetched and are counted as ``lateEvents``; in exchange the join reports the
    State's fetch progress F (see ``State.progress()``), so compaction can drop versions no fetch
    will read again. Without it F is held where the query started. The query's progress holds the
    join's metrics under ``observedMetrics["sharedstate_fetch:<state>:<window>:<lateness>:<n>"]``:
    ``eventsAnswered``, ``lateEvents``, ``eventsLeftWaiting`` (events still waiting after the
    batch), ``minWaitingMicros``, ``maxEventMicros``, ``fetchWaitMsAvg`` and ``fetchWaitMsMax``.

    ``continuous=True`` builds the join for a query run with a continuous trigger
    (``trigger(continuous="1 second")``): each event is an asynchronous fetch in the State's pending
    queue, answered as soon as U passes it; an epoch completes once all its events are answered.
    Such a join holds F where it was when the query started (continuous queries have no watermark).

    ``scope`` applies to partial States (docs/partial-state.md): ``"global"`` (the default) reads
    every instance merged as of the event's time, ``"local"`` the instance written by the writer
    task with the same partition index as the fetching task (``instances="task"`` only).
    """
    handle = state if isinstance(state, State) else State.get(events.sparkSession, state)
    return handle.fetch_join(events, key, time, rule, mode, how, staleness, window, continuous, lateness, scope)
