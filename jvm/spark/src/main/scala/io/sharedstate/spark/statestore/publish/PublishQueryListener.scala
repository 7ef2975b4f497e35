package io.sharedstate.spark.statestore.publish

import io.sharedstate.spark.changes.{QueryListeners, QueryRunListener}
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.streaming.StreamingQueryListener.{
  QueryIdleEvent,
  QueryProgressEvent,
  QueryStartedEvent,
  QueryTerminatedEvent
}
import scala.util.control.NonFatal

/**
 * Registers a query mapped to a State as the State's writer when it starts (Spark posts the event on
 * the stream thread, before the first batch) and pauses it when it stops. Commits are not made here:
 * the tasks' reports commit each version before the batch completes (see [[PublishTargets]]).
 */
private[sharedstate] final class PublishQueryListener(session: SparkSession) extends QueryRunListener {
  override protected def started(event: QueryStartedEvent): Unit =
    Option(event.name).flatMap(PublishCheck.stateOf(session, _)).foreach { state =>
      // The listener bus only logs a listener's failure: the query's tasks fail with it (PublishTargets.resolve).
      try PublishTargets.started(event.id.toString, state)
      catch { case NonFatal(e) => logError(s"Query ${event.name} (${event.id}) cannot publish to State '$state'", e) }
    }

  override def onQueryProgress(event: QueryProgressEvent): Unit = ()

  override def onQueryIdle(event: QueryIdleEvent): Unit = ()

  override protected def stopped(event: QueryTerminatedEvent): Unit = PublishTargets.stopped(event.id.toString)
}

private[sharedstate] object PublishQueryListener {

  /** Adds the listener to `spark`'s query manager once. */
  def ensure(spark: SparkSession): Unit = QueryListeners.ensure(spark, "publish")(new PublishQueryListener(spark))
}
