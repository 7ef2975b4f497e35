package io.sharedstate.spark.txn

import io.sharedstate.spark.changes.{QueryListeners, QueryRunListener}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.streaming.StreamingQueryListener.{
  QueryIdleEvent,
  QueryProgressEvent,
  QueryStartedEvent,
  QueryTerminatedEvent
}

/**
 * Registers each transactional operator of a query as a writer of its group when the query starts
 * (Spark posts that event on the stream thread, before the first batch), commits each batch's epoch
 * once its progress is reported, and pauses the writers when the query stops (see [[TransactionRuns]]).
 */
private[sharedstate] final class TransactionListener extends QueryRunListener {
  override protected def started(event: QueryStartedEvent): Unit =
    QueryListeners.nodesOf(event.id)(TransactionListener.nodesIn).foreach { case (query, nodes) =>
      TransactionRuns.started(event.id.toString, query, nodes.map(n => n.node -> n.program))
    }

  override def onQueryProgress(event: QueryProgressEvent): Unit = TransactionRuns.catchUp(event.progress.id.toString)

  override def onQueryIdle(event: QueryIdleEvent): Unit = ()

  override protected def stopped(event: QueryTerminatedEvent): Unit = TransactionRuns.stopped(event.id.toString)
}

private[sharedstate] object TransactionListener {

  /** Adds the listener to `spark`'s query manager once. */
  def ensure(spark: SparkSession): Unit = QueryListeners.ensure(spark, "transactions")(new TransactionListener)

  def nodesIn(plan: LogicalPlan): Seq[TransactionNode] = plan.collect { case n: TransactionNode => n }
}
