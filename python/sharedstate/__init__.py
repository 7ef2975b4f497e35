"""sharedstate: timestamped, shared state for Spark Structured Streaming.

A State is a named, partitioned, multi-versioned key-value table that streams update and other
streams read *as of each row's event time* (the Nova model). See README.md for the concepts.

    import sharedstate as ss
    spark = ss.session("adcamp")
    campaigns = ss.State.create(spark, "campaigns", key="ad_id STRING", value="campaign STRING")
    enriched = ss.fetch_join(events, "campaigns", key="ad_id", time="ts")
"""

from sharedstate._version import __version__
from sharedstate.errors import SharedStateError
from sharedstate.fetch import fetch_join
from sharedstate.realtime import Updater, updater
from sharedstate.session import configure, session
from sharedstate.state import State
from sharedstate.transactions import transact

__all__ = [
    "__version__",
    "SharedStateError",
    "State",
    "Updater",
    "configure",
    "fetch_join",
    "session",
    "transact",
    "updater",
]
