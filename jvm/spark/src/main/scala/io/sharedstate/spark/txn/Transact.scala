package io.sharedstate.spark.txn

import io.sharedstate.spark.cluster.Coordinator
import io.sharedstate.spark.config.Intervals
import io.sharedstate.spark.durable.DurableStates
import io.sharedstate.spark.rows.{ProgressTicks, StateSchemas}

import io.sharedstate.core.SharedStateException
import org.apache.spark.sql.DataFrame
import org.apache.spark.sql.catalyst.plans.logical.CollectMetrics
import org.apache.spark.sql.catalyst.types.DataTypeUtils.toAttributes
import org.apache.spark.sql.functions.{col, expr, lit}
import org.apache.spark.sql.sharedstate.PlanFrames
import org.apache.spark.sql.types.{LongType, Metadata, TimestampType}
import org.apache.spark.util.SerializableConfiguration

/**
 * State transactions over a stream of events (TStream): each event reads keys of one or more States,
 * checks a condition and writes new values, as one atomic step at its event time, applied once update
 * progress passes it (see [[TransactionProgram]] for the declarative form, [[TransactionRuns]] for
 * how it runs). The events are unioned with the group's progress ticks into one narrow operator
 * ([[TransactionExec]]), so a micro-batch runs when events arrive or U moves, and the outcomes U made
 * final are emitted then.
 */
private[sharedstate] object Transact {

  def apply(events: DataFrame, time: String, reads: Seq[TransactionAccess], condition: String,
      writes: Seq[TransactionAccess], outcomes: Boolean, lateness: String, logic: String = null): DataFrame = {
    if (!events.isStreaming) throw new SharedStateException(
      "Transaction: the events must be a streaming DataFrame (spark.readStream...), run as a micro-batch query.")
    val timeOrdinal = StateSchemas.checkTimestamp(events.schema, time, "time")
    val program = TransactionProgram.compile(events.schema, reads, condition, writes,
      state => StateSchemas.of(Coordinator.get.state(state).spec), logic)
    val latenessMicros = Option(lateness).map(Intervals.parseMicros("lateness", _)).getOrElse(0L)
    // With a durable member, the group keeps its steps and the tasks their staged batches under its root
    // (the first by name), and the outcomes go to the query's checkpoint (TransactionRuns).
    val root = program.states.sorted.flatMap(DurableStates.rootOf).headOption
    val conf = new SerializableConfiguration(DurableStates.hadoopConf(events.sparkSession))
    val group = TransactionGroups.of(
      program.states,
      name => root.map(r => new GroupStepLog(StagedTransactionLog.under(r, name, conf).directory, conf.value)),
      name => root.map(StagedTransactionLog.under(_, name, conf))
    )
    val log = root.map(StagedTransactionLog.under(_, group.name, conf))
    val output = toAttributes(TransactionRows.schema(program))
    val prefix = TransactionRows.name(group.name, 0).dropRight(1)
    val name = TransactionRows.name(group.name,
      events.queryExecution.analyzed.collect { case c: CollectMetrics if c.name.startsWith(prefix) => c }.size)
    // The batch's largest event time, observed as the query's metric: the writer's watermark on commit.
    val observed = events.observe(name, expr(s"unix_micros(max(${quoted(time)}))").as(TransactionRows.MaxEventMicros))
    val input = withTickColumns(observed).union(progressTicks(events, group.states.head.name, name))
    val child = input.queryExecution.analyzed
    val node = TransactionNode(program, timeOrdinal, group.name, name, latenessMicros, outcomes, log, child.output,
      output,
      child)
    TransactionListener.ensure(events.sparkSession)
    PlanFrames.of(events.sparkSession, node)
  }

  // The events (their watermarks kept for the query, not on their columns) with the two null tick columns.
  private def withTickColumns(events: DataFrame): DataFrame =
    events.select(events.schema.fields.map(f => col(quoted(f.name)).as(f.name, Metadata.empty)).toIndexedSeq ++ Seq(
        lit(null).cast(TimestampType).as(ProgressTicks.Column),
        lit(null).cast(LongType).as(ProgressTicks.FromColumn)): _*)

  // One row per step of the group's U, with null event columns: a micro-batch runs when U moves.
  private def progressTicks(events: DataFrame, state: String, node: String): DataFrame = {
    val table = new TransactionTickTable(Coordinator.get.state(state), node)
    val ticks = PlanFrames.stream(events.sparkSession, "sharedstate", table, ProgressTicks.schema)
    ticks.select(events.schema.fields.map(f => lit(null).cast(f.dataType).as(f.name)).toIndexedSeq ++
        ProgressTicks.schema.fieldNames.map(c => col(c)): _*)
  }

  private def quoted(name: String): String = "`" + name.replace("`", "``") + "`"

}
