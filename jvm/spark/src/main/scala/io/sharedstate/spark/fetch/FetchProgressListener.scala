package io.sharedstate.spark.fetch

import io.sharedstate.spark.changes.{QueryListeners, QueryRunListener}
import io.sharedstate.spark.cluster.Coordinator
import io.sharedstate.spark.fetch.batch.FetchJoinProgress
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.streaming.StreamingQueryListener.{
  QueryIdleEvent,
  QueryProgressEvent,
  QueryStartedEvent,
  QueryTerminatedEvent
}
import scala.util.Try

/**
 * Registers each streaming fetch join of a query as a reader of its State when the query starts
 * (Spark posts that event before the first batch), reports their F after each batch (see
 * [[FetchJoinProgress]]) and removes them, and the query's continuous-join readers, when it stops.
 */
private[sharedstate] final class FetchProgressListener extends QueryRunListener {
  override protected def started(event: QueryStartedEvent): Unit =
    QueryListeners.nodesOf(event.id)(FetchProgressListener.joinsIn).foreach { case (query, joins) =>
      val registered = joins.map { n =>
        val reader = FetchJoinProgress.Reader(FetchJoinProgress.readerId(event.id.toString, n.join), n.join,
          n.spec.stateName, n.spec.rule.windowMicros, n.latenessMicros, n.eventsWatermarked)
        Coordinator.get.state(reader.state).ensureReader(reader.id)
        reader
      }
      FetchJoinProgress.track(event.id.toString, query, registered)
    }

  override def onQueryProgress(event: QueryProgressEvent): Unit = FetchJoinProgress.catchUp(event.progress.id.toString)

  override def onQueryIdle(event: QueryIdleEvent): Unit = ()

  override protected def stopped(event: QueryTerminatedEvent): Unit = {
    FetchJoinProgress.untrack(event.id.toString)
      .foreach(r => Try(Coordinator.get.state(r.state).deregisterReader(r.id)))
    val continuousReader = s"${ContinuousFetchReaders.Prefix}${event.id}"
    Coordinator.get.names.foreach { name =>
      Try(Coordinator.get.state(name)).foreach { s =>
        if (s.readerProgress(continuousReader).isDefined) s.deregisterReader(continuousReader)
      }
    }
  }
}

private[sharedstate] object FetchProgressListener {

  /** Adds the listener to `spark`'s query manager once. */
  def ensure(spark: SparkSession): Unit = QueryListeners.ensure(spark, "fetch-joins")(new FetchProgressListener)

  /** The streaming fetch joins in a query's plan (their nodes carry the State, window and lateness). */
  def joinsIn(plan: LogicalPlan): Seq[FetchJoinNode] =
    plan.collect { case n: FetchJoinNode if n.child.isStreaming => n }
}
