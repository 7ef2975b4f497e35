package io.sharedstate.spark.changes

import java.util.UUID
import org.apache.spark.internal.Logging
import org.apache.spark.sql.streaming.StreamingQueryListener
import org.apache.spark.sql.streaming.StreamingQueryListener.{QueryStartedEvent, QueryTerminatedEvent}
import scala.collection.mutable

/**
 * A query listener that acts on a query's start and stop by run: it ignores the stop of a run when a
 * newer run of the same query (a restart from its checkpoint: the same id, a new run id) has started
 * since. Spark posts a start to the session's listeners synchronously, on the stream thread, but a
 * stop through the asynchronous listener bus: after a quick restart, or with a busy bus, the old run's
 * stop can arrive after the new run's start, and acting on it would pause the running writer or
 * remove the running join's readers. Start and stop handling never interleave (one lock).
 */
private[sharedstate] abstract class QueryRunListener extends StreamingQueryListener with Logging {
  // query id -> the run that started last and has not stopped (read and written under the lock)
  private val runs = mutable.HashMap.empty[UUID, UUID]

  /** The query's run `event.runId` started (before its first batch). */
  protected def started(event: QueryStartedEvent): Unit

  /** The query's latest run stopped. */
  protected def stopped(event: QueryTerminatedEvent): Unit

  final override def onQueryStarted(event: QueryStartedEvent): Unit = synchronized {
    runs.put(event.id, event.runId)
    started(event)
  }

  final override def onQueryTerminated(event: QueryTerminatedEvent): Unit = synchronized {
    val latest = runs.get(event.id)
    // No run recorded: the query started before this listener was added; its stop still counts.
    if (latest.forall(_ == event.runId)) {
      runs.remove(event.id)
      stopped(event)
    } else {
      logInfo(s"Query ${event.id}: ignoring the stop of run ${event.runId}, delivered after run ${latest.get} started")
    }
  }
}
