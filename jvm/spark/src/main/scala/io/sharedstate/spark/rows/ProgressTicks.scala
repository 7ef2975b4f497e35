package io.sharedstate.spark.rows

import org.apache.spark.sql.types.{LongType, StructField, StructType, TimestampType}

/**
 * The `progress` table of a State as a stream: one row each time U advances, `__sharedstate_u` = U
 * and `__sharedstate_u_from` = the U of the previous row in microseconds (Long.MinValue for the
 * first). A fetch join unions it with its events (see fetch.FetchJoin), so Spark runs a micro-batch when
 * events arrive or U moves, and a waiting event is answered in the first batch after U passes it.
 */
private[sharedstate] object ProgressTicks {
  val Column = "__sharedstate_u"
  val FromColumn = "__sharedstate_u_from"
  val schema: StructType = StructType(Seq(StructField(Column, TimestampType, nullable = false),
      StructField(FromColumn, LongType, nullable = false)))

  /** U = +infinity (every writer finished) as a timestamp: 9999-12-31 23:59:59.999999 UTC. */
  val Infinity: Long = 253402300799999999L
}
