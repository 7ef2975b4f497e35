package io.sharedstate.spark.fetch

import io.sharedstate.spark.cluster.Coordinator
import io.sharedstate.spark.config.Intervals
import io.sharedstate.spark.fetch.batch.FetchTickTable
import io.sharedstate.spark.rows.ProgressTicks

import org.apache.spark.sql.{Column, DataFrame}
import org.apache.spark.sql.catalyst.plans.logical.{CollectMetrics, EventTimeWatermark, LogicalPlan}
import org.apache.spark.sql.catalyst.types.DataTypeUtils.toAttributes
import org.apache.spark.sql.functions.{col, lit}
import org.apache.spark.sql.sharedstate.PlanFrames
import org.apache.spark.sql.types.{LongType, Metadata, TimestampType}

/**
 * Fetch joins: enrich each event with what a State holds as of the event's time.
 * {{{
 *   FetchJoin(events, "campaigns", Seq("ad_id"), "ts")                            // latest, read-committed, left
 *   FetchJoin(events, "clicks", Seq("user"), "ts", rule = "sum", window = "1 hour") // sum over [ts - 1 hour, ts]
 * }}}
 * A streaming join unions the events with the State's progress stream ([[ProgressTicks]]) into one
 * narrow operator ([[FetchJoinExec]]: no shuffle, no sort): each task answers what U allows and
 * writes what must wait to the query's checkpoint, for the next micro-batch to take over; a tick row
 * each time U moves makes Spark run that batch even with no new events, and no micro-batch runs
 * unless events arrive or U moves. With `continuous = true` the join runs in continuous-mode queries (see [[ContinuousFetchJoin]]).
 * The output is the events' columns then the columns of the rule (see [[FetchJoinRule]]). Each join
 * reports metrics in its query's progress (observed metrics named `sharedstate_fetch:<state>:...`):
 * events answered, late events, pending fetches, the earliest waiting time, and fetch wait (ms).
 * With `lateness`, events more than that behind the latest event seen are late (not fetched,
 * counted), which lets the join advance the State's fetch progress F.
 */
private[sharedstate] object FetchJoin {

  def apply(events: DataFrame, state: String, keys: Seq[String], time: String, rule: String = "latest",
      mode: String = "committed", how: String = "left", staleness: String = null, window: String = null,
      continuous: Boolean = false, lateness: String = null, scope: String = "global"): DataFrame = {
    val spec = FetchJoinSpec(events.schema, state, keys, time, rule, mode, how, staleness, window, scope)
    val latenessMicros = Option(lateness).map(Intervals.parseMicros("lateness", _)).getOrElse(-1L)
    if (continuous) {
      if (!events.isStreaming) throw new io.sharedstate.core.SharedStateException(
        "Fetch join: continuous = true needs a streaming DataFrame run with a continuous trigger.")
      if (lateness != null) throw new io.sharedstate.core.SharedStateException(
        "Fetch join: lateness applies to micro-batch fetch joins only; a continuous one holds F where it started.")
      FetchProgressListener.ensure(events.sparkSession)
      return ContinuousFetchJoin(events, spec)
    }
    val plan = events.queryExecution.analyzed
    val sameKind = FetchJoinRows.metricsName(state, spec.rule.windowMicros, latenessMicros, 0).dropRight(1)
    val name = FetchJoinRows.metricsName(state, spec.rule.windowMicros, latenessMicros,
      plan.collect { case c: CollectMetrics if c.name.startsWith(sameKind) => c }.size)
    val input = withTickColumns(events)
    val joined = if (events.isStreaming) input.union(progressTicks(events, state, name)) else input
    val child = joined.queryExecution.analyzed
    val output = toAttributes(FetchJoinRows.schema(spec.outputSchema))
    val rows =
      PlanFrames.of(events.sparkSession,
        FetchJoinNode(spec, name, latenessMicros, watermarked(plan), child.output, output, child))
    if (events.isStreaming) FetchProgressListener.ensure(events.sparkSession)
    FetchJoinRows.finish(rows, name)
  }

  // The events (their own watermarks kept for the query, but not on their columns, so Spark does
  // not drop rows of ours behind them) with the two tick columns, null: plain columns, no conversion.
  private def withTickColumns(events: DataFrame): DataFrame =
    events.select(events.schema.fields.map(f => quoted(f.name).as(f.name, Metadata.empty)).toIndexedSeq ++ Seq(
        lit(null).cast(TimestampType).as(ProgressTicks.Column),
        lit(null).cast(LongType).as(ProgressTicks.FromColumn)): _*)

  // One row per U step, with null event columns: it makes Spark run a micro-batch when U moves, so
  // waiting events are answered with no new input. The ticks' zero-delay watermark makes the batch
  // watermark U, which bounds the join's F.
  private def progressTicks(events: DataFrame, state: String, join: String): DataFrame = {
    val table = new FetchTickTable(Coordinator.get.state(state), join)
    val ticks = PlanFrames.stream(events.sparkSession, "sharedstate", table, ProgressTicks.schema).withWatermark(
      ProgressTicks.Column, "0 seconds")
    ticks.select(events.schema.fields.map(f => lit(null).cast(f.dataType).as(f.name)).toIndexedSeq ++
        ProgressTicks.schema.fieldNames.map(col): _*)
  }

  // The events carry a watermark (withWatermark): the join reports F from it, with no lateness option.
  // Not the zero-delay watermark of an earlier fetch join's progress ticks in the events' plan (a join
  // fed by another): that one follows U, not the events, and would make on-time events late.
  private def watermarked(plan: LogicalPlan): Boolean = plan.exists {
    case w: EventTimeWatermark => w.eventTime.name != ProgressTicks.Column
    case _ => false
  }

  private def quoted(name: String): Column = col("`" + name.replace("`", "``") + "`")
}
