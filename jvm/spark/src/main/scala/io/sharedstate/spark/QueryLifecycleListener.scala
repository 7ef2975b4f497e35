package io.sharedstate.spark

import io.sharedstate.spark.changes.{QueryListeners, QueryRunListener}
import io.sharedstate.spark.config.UpdateOptions
import io.sharedstate.spark.write.WriterLifecycle
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper
import org.apache.spark.sql.streaming.StreamingQueryListener.{
  QueryIdleEvent,
  QueryProgressEvent,
  QueryStartedEvent,
  QueryTerminatedEvent
}

/**
 * Registers a streaming query that writes into a State as the State's writer when the query starts
 * (Spark posts that event on the stream thread, before the first batch) and pauses it when the
 * query stops (see write.WriterLifecycle). Installed by the start-time check of such queries.
 */
private[sharedstate] final class QueryLifecycleListener extends QueryRunListener {
  override protected def started(event: QueryStartedEvent): Unit =
    Option(SparkSession.active.streams.get(event.id)).collect { case q: StreamingQueryWrapper => q.streamingQuery.sink }
      .foreach {
        case table: SharedStateTable =>
          WriterLifecycle.started(table.spec.name, event.id.toString, UpdateOptions.idleTimeoutMicros(table.options))
        case _ =>
      }

  override def onQueryProgress(event: QueryProgressEvent): Unit = ()

  override def onQueryIdle(event: QueryIdleEvent): Unit = ()

  override protected def stopped(event: QueryTerminatedEvent): Unit = WriterLifecycle.stopped(event.id.toString)
}

private[sharedstate] object QueryLifecycleListener {

  /** Adds the listener to `spark`'s query manager once. */
  def ensure(spark: SparkSession): Unit = QueryListeners.ensure(spark, "writer-lifecycle")(new QueryLifecycleListener)
}
