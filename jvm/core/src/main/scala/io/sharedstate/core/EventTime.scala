package io.sharedstate.core

import java.time.Instant

/** Event time is a Long of microseconds since the epoch (Spark's TimestampType). */
object EventTime {

  /** Progress of a State nothing has been committed to: no value is final yet. */
  val MinusInfinity: Long = Long.MinValue

  /** Progress of a State with no streaming writer after a batch load: every value is final. */
  val PlusInfinity: Long = Long.MaxValue

  def isFinite(t: Long): Boolean = t != MinusInfinity && t != PlusInfinity

  def show(t: Long): String =
    if (t == MinusInfinity) "-infinity"
    else if (t == PlusInfinity) "+infinity"
    else Instant.ofEpochSecond(Math.floorDiv(t, 1000000L), Math.floorMod(t, 1000000L) * 1000L).toString
}
