"""Real-time mode: a State updated from a query with ``trigger(realTime=...)``.

Real-time mode accepts the Kafka, foreach, console and memory sinks, so a State is written through
``writeStream.foreach(sharedstate.updater(...))``. The updater is a JVM ``ForeachWriter[Row]``
reached through py4j: PySpark's own ``foreach`` would run every row through a Python worker (a
Python UDF, which real-time mode does not allow and which would cost a round trip per row), so
``DataStreamWriter.foreach`` is taught to hand an :class:`Updater` to the JVM writer as it is.
"""

from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql.streaming.readwriter import DataStreamWriter

from sharedstate._jvm import api


class Updater:
    """A State's real-time updater: pass it to ``writeStream.foreach``. See :func:`updater`."""

    def __init__(self, jwriter, state: str):
        self._jwriter = jwriter
        self.state = state

    def __repr__(self) -> str:
        return f"Updater(state={self.state!r})"


def updater(
    spark: SparkSession,
    state: str,
    key: str,
    time: str,
    value: str | None = None,
    lateness: str | None = None,
    **options: str,
) -> Updater:
    """Updates ``state`` from a real-time query: ``df.writeStream.foreach(ss.updater(spark, ...))``.

    ``key``, ``time``, ``value`` and ``lateness`` are the options of the ``sharedstate`` sink (the
    key column(s) comma-separated, the TIMESTAMP column, the value column(s), the allowed
    lateness); ``maxAhead`` and ``idleTimeout`` may be given as keywords. Each input partition of the query is a writer
    of the State (``<query id>#p<partition>``): it commits what it read every
    ``spark.sharedstate.realtime.flushInterval`` (5 milliseconds), with its own watermark (max event time it
    read minus ``lateness``), so U is the minimum over the partitions. A replayed epoch (a restart
    from the checkpoint) skips the rows the failed run already committed: no update counts twice.
    """
    jopts = spark._jvm.java.util.HashMap()
    for k, v in options.items():
        jopts.put(k, str(v))
    jwriter = api(spark).updater(spark._jsparkSession, state, key, time, value, lateness, jopts)
    return Updater(jwriter, state)


_spark_foreach = DataStreamWriter.foreach


def _foreach(self: DataStreamWriter, f):
    if isinstance(f, Updater):
        self._jwrite.foreach(f._jwriter)
        return self
    return _spark_foreach(self, f)


_foreach.__doc__ = _spark_foreach.__doc__
DataStreamWriter.foreach = _foreach  # type: ignore[method-assign]
