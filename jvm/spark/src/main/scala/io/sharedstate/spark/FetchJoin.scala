package io.sharedstate.spark

import org.apache.spark.sql.{DataFrame, Encoders, Row}
import org.apache.spark.sql.streaming.{GroupStateTimeout, OutputMode}

/**
 * Fetch joins: enrich each event with the value of a State as of the event's time.
 * {{{
 *   FetchJoin(events, "campaigns", Seq("ad_id"), "ts")   // latest, read-committed, left
 * }}}
 * The output is the events' columns, the State's value columns, and `<state>_time`, the timestamp
 * of the value used (null when the key had no value at that time, for how = "left").
 */
object FetchJoin {
  val DefaultPollIntervalMs = 100L

  def apply(events: DataFrame, state: String, keys: Seq[String], time: String, rule: String = "latest",
      mode: String = "committed", how: String = "left",
      pollIntervalMs: Long = DefaultPollIntervalMs, staleness: String = null): DataFrame = {
    val spec = FetchJoinSpec(events.schema, state, keys, time, rule, mode, how, pollIntervalMs, staleness)
    val keyOf = new KeyColumns(spec.keyOrdinals)
    events
      .groupByKey(keyOf)(Encoders.row(spec.keySchema))
      .flatMapGroupsWithState(OutputMode.Append(), GroupStateTimeout.ProcessingTimeTimeout())(
        new FetchLatestFunction(spec, events.isStreaming))(Encoders.row(spec.waitingSchema), Encoders.row(spec.outputSchema))
      .toDF()
  }

  /** Entry point for Python: keys as a comma-separated list. */
  def join(events: DataFrame, state: String, keys: String, time: String, rule: String, mode: String,
      how: String, pollIntervalMs: Long, staleness: String): DataFrame =
    apply(events, state, keys.split(",").map(_.trim).filter(_.nonEmpty).toSeq, time, rule, mode, how,
      pollIntervalMs, staleness)
}

/** Picks the key columns out of an event row (the grouping key of the fetch join). */
final class KeyColumns(ordinals: Array[Int]) extends (Row => Row) with Serializable {
  override def apply(row: Row): Row = Row.fromSeq(ordinals.toSeq.map(row.get))
}
