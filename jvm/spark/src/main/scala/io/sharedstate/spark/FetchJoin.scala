package io.sharedstate.spark

import org.apache.spark.sql.{DataFrame, Encoders, Row}
import org.apache.spark.sql.catalyst.plans.logical.{CollectMetrics, EventTimeWatermark}
import org.apache.spark.sql.streaming.{GroupStateTimeout, OutputMode}

/**
 * Fetch joins: enrich each event with what a State holds as of the event's time.
 * {{{
 *   FetchJoin(events, "campaigns", Seq("ad_id"), "ts")                            // latest, read-committed, left
 *   FetchJoin(events, "clicks", Seq("user"), "ts", rule = "sum", window = "1 hour") // sum over [ts - 1 hour, ts]
 * }}}
 * With `continuous = true` the join runs in continuous-mode queries (see [[ContinuousFetchJoin]]).
 * The output is the events' columns then the columns of the rule (see [[FetchJoinRule]]). Each join
 * reports metrics in its query's progress (observed metrics named `sharedstate_fetch:<state>:...`):
 * events answered, late events, pending fetches, the earliest waiting time, and fetch wait (ms).
 */
object FetchJoin {

  def apply(events: DataFrame, state: String, keys: Seq[String], time: String, rule: String = "latest",
      mode: String = "committed", how: String = "left", staleness: String = null, window: String = null,
      continuous: Boolean = false): DataFrame = {
    val spec = FetchJoinSpec(events.schema, state, keys, time, rule, mode, how, staleness, window)
    if (continuous) {
      if (!events.isStreaming) throw new io.sharedstate.core.SharedStateException(
        "Fetch join: continuous = true needs a streaming DataFrame run with a continuous trigger.")
      if (events.sparkSession != null) FetchProgressListener.ensure(events.sparkSession)
      return ContinuousFetchJoin(events, spec)
    }
    val plan = events.queryExecution.analyzed
    val hasWatermark = events.isStreaming && plan.exists(_.isInstanceOf[EventTimeWatermark])
    val sameKind = FetchJoinRows.metricsName(state, spec.rule.windowMicros, 0).dropRight(1)
    val name = FetchJoinRows.metricsName(state, spec.rule.windowMicros,
      plan.collect { case c: CollectMetrics if c.name.startsWith(sameKind) => c }.size)
    val rows = events
      .groupByKey(new KeyColumns(spec.keyOrdinals))(Encoders.row(spec.keySchema))
      .flatMapGroupsWithState(OutputMode.Append(), GroupStateTimeout.ProcessingTimeTimeout())(
        new FetchJoinFunction(spec, events.isStreaming, hasWatermark))(
        Encoders.row(spec.waitingSchema), Encoders.row(FetchJoinRows.schema(spec.outputSchema)))
      .toDF()
    if (events.isStreaming) FetchProgressListener.ensure(events.sparkSession)
    FetchJoinRows.finish(rows, name)
  }

  /** Entry point for Python: keys as a comma-separated list. */
  def join(events: DataFrame, state: String, keys: String, time: String, rule: String, mode: String,
      how: String, staleness: String, window: String, continuous: Boolean): DataFrame =
    apply(events, state, keys.split(",").map(_.trim).filter(_.nonEmpty).toSeq, time, rule, mode, how, staleness, window,
      continuous)
}

/** Picks the key columns out of an event row (the grouping key of the fetch join). */
final class KeyColumns(ordinals: Array[Int]) extends (Row => Row) with Serializable {
  override def apply(row: Row): Row = Row.fromSeq(ordinals.toSeq.map(row.get))
}
