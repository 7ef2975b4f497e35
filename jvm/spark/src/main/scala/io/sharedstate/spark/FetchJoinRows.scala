package io.sharedstate.spark

import org.apache.spark.sql.{Column, DataFrame, Row}
import org.apache.spark.sql.catalyst.expressions.GenericRow
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

  /** An answered event: its first `eventWidth` columns, then the rule's cells. */
  def answered(event: Row, eventWidth: Int, cells: Seq[Any], waitedMs: Long, time: Long): Row =
    row(event, eventWidth, cells, cells.length, Answered, waitedMs, 0L, time, time)

  def late(event: Row, eventWidth: Int, width: Int, time: Long): Row =
    row(event, eventWidth, Nil, width, Late, 0L, 0L, time, time)

  /** Stands for a key's waiting events: it carries one of them so non-null event columns stay valid. */
  def waiting(sample: Row, eventWidth: Int, width: Int, count: Int, minTime: Long, maxTime: Long): Row =
    row(sample, eventWidth, Nil, width, WaitingKey, 0L, count.toLong, minTime, maxTime)

  /** The first `n` columns of `event` as a row of their own. */
  def prefix(event: Row, n: Int): Row =
    if (event.length == n) event else { val a = new Array[Any](n); copy(event, n, a); new GenericRow(a) }

  // One array per output row (this runs once per event): event columns, cells (nulls past their end), bookkeeping.
  private def row(event: Row, eventWidth: Int, cells: Seq[Any], width: Int, kind: Int, waitedMs: Long, waiting: Long,
      minTime: Long, maxTime: Long): Row = {
    val a = new Array[Any](eventWidth + width + 5)
    copy(event, eventWidth, a)
    cells.copyToArray(a, eventWidth)
    val b = eventWidth + width
    a(b) = kind; a(b + 1) = waitedMs; a(b + 2) = waiting; a(b + 3) = minTime; a(b + 4) = maxTime
    new GenericRow(a)
  }

  private def copy(event: Row, n: Int, to: Array[Any]): Unit = {
    var i = 0
    while (i < n) { to(i) = event.get(i); i += 1 }
  }

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
