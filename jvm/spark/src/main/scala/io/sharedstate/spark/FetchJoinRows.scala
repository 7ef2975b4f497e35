package io.sharedstate.spark

import org.apache.spark.sql.{Column, DataFrame, Row}
import org.apache.spark.sql.functions.{avg, coalesce, col, count, lit, max, min, sum, when}
import org.apache.spark.sql.types.{IntegerType, LongType, StructField, StructType}

/**
 * The rows a fetch join's operator emits: answered events plus bookkeeping rows (late events and one
 * per waiting key) in extra columns. The join observes them as the query's metrics, under
 * [[FetchJoinRows.metricsName]], then keeps the answered rows and drops the extra columns.
 */
object FetchJoinRows {
  val Kind = "__sharedstate_kind"
  val WaitMs = "__sharedstate_wait_ms"
  val Waiting = "__sharedstate_waiting"
  val MinTime = "__sharedstate_min_time"
  val MaxTime = "__sharedstate_max_time"
  private val Answered = 0
  private val Late = 1
  private val WaitingKey = 2
  val MetricsPrefix = "sharedstate_fetch"

  def schema(output: StructType): StructType = StructType(output.fields ++ Seq(
    StructField(Kind, IntegerType, nullable = false), StructField(WaitMs, LongType, nullable = false),
    StructField(Waiting, LongType, nullable = false), StructField(MinTime, LongType, nullable = false),
    StructField(MaxTime, LongType, nullable = false)))

  def answered(event: Row, cells: Seq[Any], waitedMs: Long, time: Long): Row =
    Row.fromSeq(event.toSeq ++ cells ++ Seq[Any](Answered, waitedMs, 0L, time, time))

  def late(event: Row, width: Int, time: Long): Row =
    Row.fromSeq(event.toSeq ++ Seq.fill(width)(null) ++ Seq[Any](Late, 0L, 0L, time, time))

  /** Stands for a key's waiting events: it carries one of them so non-null event columns stay valid. */
  def waiting(sample: Row, width: Int, count: Int, minTime: Long, maxTime: Long): Row =
    Row.fromSeq(sample.toSeq ++ Seq.fill(width)(null) ++ Seq[Any](WaitingKey, 0L, count.toLong, minTime, maxTime))

  /** `sharedstate_fetch:<state>:<window µs>:<lateness µs or -1>:<n>`: what the driver needs for F. */
  def metricsName(state: String, windowMicros: Long, latenessMicros: Long, n: Int): String =
    s"$MetricsPrefix:$state:$windowMicros:$latenessMicros:$n"

  /** (state, window µs, lateness µs or -1) of a fetch join's metrics name, or None. */
  def parseMetricsName(name: String): Option[(String, Long, Long)] = name.split(':') match {
    case Array(MetricsPrefix, state, window, lateness, _) =>
      for (w <- window.toLongOption; l <- lateness.toLongOption) yield (state, w, l)
    case _ => None
  }

  /** Observes the bookkeeping as metrics, then keeps only the answered events. */
  def finish(rows: DataFrame, name: String): DataFrame = {
    val answered = col(Kind) === Answered
    val metrics: Seq[Column] = Seq(
      count(when(answered, 1)).as("eventsAnswered"),
      count(when(col(Kind) === Late, 1)).as("lateEvents"),
      coalesce(sum(col(Waiting)), lit(0L)).as("eventsLeftWaiting"),
      min(when(col(Kind) === WaitingKey, col(MinTime))).as("minWaitingMicros"),
      max(col(MaxTime)).as("maxEventMicros"),
      avg(when(answered, col(WaitMs))).as("fetchWaitMsAvg"),
      max(when(answered, col(WaitMs))).as("fetchWaitMsMax"))
    rows.observe(name, metrics.head, metrics.tail: _*)
      .where(answered)
      .drop(Kind, WaitMs, Waiting, MinTime, MaxTime)
  }
}
