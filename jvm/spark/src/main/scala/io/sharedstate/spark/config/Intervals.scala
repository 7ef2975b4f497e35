package io.sharedstate.spark.config

import io.sharedstate.core.SharedStateException
import org.apache.spark.sql.catalyst.util.IntervalUtils
import org.apache.spark.unsafe.types.UTF8String
import scala.util.control.NonFatal

/** Parses an interval option (lateness, staleness: "5 seconds", "1 minute") into microseconds. */
private[sharedstate] object Intervals {
  def parseMicros(option: String, text: String): Long = {
    val interval =
      try IntervalUtils.stringToInterval(UTF8String.fromString(text))
      catch {
        case NonFatal(e) => throw new SharedStateException(
            s"Option '$option': '$text' is not an interval; use e.g. '5 seconds' or '2 minutes'.", e)
      }
    if (interval.months != 0) {
      throw new SharedStateException(s"Option '$option': '$text' uses months or years, whose length varies; " +
        "use days, hours, minutes or seconds.")
    }
    val micros = interval.days * 86400L * 1000000L + interval.microseconds
    if (micros < 0) throw new SharedStateException(s"Option '$option': '$text' is negative; it must be >= 0.")
    micros
  }
}
