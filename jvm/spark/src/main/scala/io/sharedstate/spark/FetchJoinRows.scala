package io.sharedstate.spark

import org.apache.spark.sql.{Column, DataFrame}
import org.apache.spark.sql.functions.{avg, coalesce, col, count, lit, max, min, sum, when}
import org.apache.spark.sql.types.{IntegerType, LongType, StructField, StructType}

/**
 * The rows a fetch join's operator emits: answered events plus bookkeeping rows (late events and one
 * per task that leaves events waiting) in extra columns. The join observes them as the query's metrics, under
 * [[FetchJoinRows.metricsName]], then keeps the answered rows and drops the extra columns.
 */
object FetchJoinRows {
  val Kind = "__sharedstate_kind"
  val WaitMs = "__sharedstate_wait_ms"
  val Waiting = "__sharedstate_waiting"
  val MinTime = "__sharedstate_min_time"
  val MaxTime = "__sharedstate_max_time"
  val AnsweredKind = 0
  val LateKind = 1
  /** A row that stands for a task's waiting events: it carries one of them, so non-null event columns stay valid. */
  val WaitingKind = 2
  /** Columns after the rule's cells: kind, wait ms, waiting count, min time, max time. */
  val Bookkeeping = 5
  val MetricsPrefix = "sharedstate_fetch"

  def schema(output: StructType): StructType = StructType(output.fields ++ Seq(
    StructField(Kind, IntegerType, nullable = false), StructField(WaitMs, LongType, nullable = false),
    StructField(Waiting, LongType, nullable = false), StructField(MinTime, LongType, nullable = false),
    StructField(MaxTime, LongType, nullable = false)))

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
    val answered = col(Kind) === AnsweredKind
    val metrics: Seq[Column] = Seq(
      count(when(answered, 1)).as("eventsAnswered"),
      count(when(col(Kind) === LateKind, 1)).as("lateEvents"),
      coalesce(sum(col(Waiting)), lit(0L)).as("eventsLeftWaiting"),
      min(when(col(Kind) === WaitingKind, col(MinTime))).as("minWaitingMicros"),
      max(col(MaxTime)).as("maxEventMicros"),
      avg(when(answered, col(WaitMs))).as("fetchWaitMsAvg"),
      max(when(answered, col(WaitMs))).as("fetchWaitMsMax"))
    rows.observe(name, metrics.head, metrics.tail: _*)
      .where(answered)
      .drop(Kind, WaitMs, Waiting, MinTime, MaxTime)
  }
}
