package io.sharedstate.spark.fetch

import org.apache.spark.sql.{Column, DataFrame}
import org.apache.spark.sql.functions.{coalesce, col, lit, max, min, sum, when}
import org.apache.spark.sql.types.{IntegerType, LongType, StructField, StructType}

/**
 * The rows a fetch join's operator emits: answered events, plus one summary row per task that tallies
 * what the task did (answered, late and waiting events, times, fetch waits), in extra columns that
 * are null on answered rows. The join observes the summaries as the query's metrics, under
 * [[FetchJoinRows.metricsName]], then keeps the answered rows and drops the extra columns. (A tally
 * per task rather than per row: the observed aggregates then cost one null check per answered row.)
 */
private[sharedstate] object FetchJoinRows {
  val Kind = "__sharedstate_kind"
  val Answered = "__sharedstate_answered"
  val Late = "__sharedstate_late"
  val Waiting = "__sharedstate_waiting"
  val MinWaiting = "__sharedstate_min_waiting"
  val MaxEvent = "__sharedstate_max_event"
  val WaitSum = "__sharedstate_wait_ms_sum"
  val WaitMax = "__sharedstate_wait_ms_max"
  val AnsweredKind = 0

  /** A task's summary row: it carries one of the task's events, so non-null event columns stay valid. */
  val SummaryKind = 1
  private val TallyColumns = Seq(Answered, Late, Waiting, MinWaiting, MaxEvent, WaitSum, WaitMax)

  /** Columns after the rule's cells: the kind, then the tally (see [[FetchJoinTally]]). */
  val Bookkeeping: Int = 1 + TallyColumns.size
  val MetricsPrefix = "sharedstate_fetch"

  def schema(output: StructType): StructType = StructType(output.fields ++
    (StructField(Kind, IntegerType, nullable = false) +: TallyColumns.map(StructField(_, LongType, nullable = true))))

  /** `sharedstate_fetch:<state>:<window µs>:<lateness µs or -1>:<n>`: the join's name in its query (its metrics, bounds and reader). */
  def metricsName(state: String, windowMicros: Long, latenessMicros: Long, n: Int): String =
    s"$MetricsPrefix:$state:$windowMicros:$latenessMicros:$n"

  /** Observes the summaries as metrics, then keeps only the answered events. */
  def finish(rows: DataFrame, name: String): DataFrame = {
    val answered = coalesce(sum(col(Answered)), lit(0L))
    val metrics: Seq[Column] = Seq(
      answered.as("eventsAnswered"),
      coalesce(sum(col(Late)), lit(0L)).as("lateEvents"),
      coalesce(sum(col(Waiting)), lit(0L)).as("eventsLeftWaiting"),
      min(col(MinWaiting)).as("minWaitingMicros"),
      max(col(MaxEvent)).as("maxEventMicros"),
      when(answered > 0, sum(col(WaitSum)) / answered).as("fetchWaitMsAvg"),
      max(col(WaitMax)).as("fetchWaitMsMax")
    )
    rows.observe(name, metrics.head, metrics.tail: _*)
      .where(col(Kind) === AnsweredKind)
      .drop(Kind +: TallyColumns: _*)
  }
}
