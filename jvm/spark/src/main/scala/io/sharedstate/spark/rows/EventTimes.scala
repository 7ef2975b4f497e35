package io.sharedstate.spark.rows

import java.sql.Timestamp
import java.time.Instant
import org.apache.spark.sql.catalyst.util.DateTimeUtils

/** Converts between external timestamp objects (Timestamp or Instant) and microseconds. */
private[sharedstate] object EventTimes {
  def micros(value: Any): Long = value match {
    case t: Timestamp => DateTimeUtils.fromJavaTimestamp(t)
    case i: Instant => DateTimeUtils.instantToMicros(i)
    case other => throw new IllegalArgumentException(s"not a timestamp: $other")
  }

  /** `micros` as the same kind of object as `like` (the session decides which one rows carry). */
  def external(micros: Long, like: Any): Any = like match {
    case _: Instant => DateTimeUtils.microsToInstant(micros)
    case _ => DateTimeUtils.toJavaTimestamp(micros)
  }
}
