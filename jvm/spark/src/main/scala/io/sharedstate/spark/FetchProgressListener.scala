package io.sharedstate.spark

import io.sharedstate.core.EventTime
import io.sharedstate.spark.distributed.Coordinator
import java.time.Instant
import java.util.UUID
import java.util.concurrent.ConcurrentHashMap
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.CollectMetrics
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper
import org.apache.spark.sql.streaming.StreamingQueryListener
import org.apache.spark.sql.streaming.StreamingQueryListener.{QueryIdleEvent, QueryProgressEvent, QueryStartedEvent, QueryTerminatedEvent}
import scala.util.Try

/**
 * The fetch side's progress F. Each fetch join of a streaming query is a reader of its State,
 * registered when the query starts (Spark posts that event before the first batch) and removed when
 * it stops; the reader id is the query id, stable across restarts from a checkpoint, plus the join.
 * After every batch the reader reports F = min(the events' watermark, the earliest waiting event)
 * minus the join's window: no fetch the query makes later reads below that (events behind the
 * watermark are counted as late and not fetched), so compaction may drop what is older.
 * A query without a watermark never advances its F, which keeps every version of the State.
 */
final class FetchProgressListener extends StreamingQueryListener with Logging {
  import FetchProgressListener.Reader

  private val readers = new ConcurrentHashMap[UUID, Seq[Reader]]()

  override def onQueryStarted(event: QueryStartedEvent): Unit = {
    val joins = SparkSession.active.streams.get(event.id) match {
      case q: StreamingQueryWrapper => FetchProgressListener.joinsIn(q.streamingQuery.analyzedPlan)
      case _ => Nil
    }
    if (joins.nonEmpty) {
      val registered = joins.map { case (name, state, window) =>
        val reader = Reader(s"fetch-join:${event.id}:$name", name, state, window)
        Coordinator.get.state(state).registerReader(reader.id)
        reader
      }
      readers.put(event.id, registered)
    }
  }

  override def onQueryProgress(event: QueryProgressEvent): Unit = {
    val own = readers.get(event.progress.id)
    if (own != null) {
      val watermark = Option(event.progress.eventTime.get("watermark")).flatMap(w => Try(Instant.parse(w)).toOption)
      own.foreach { reader =>
        val metrics = Option(event.progress.observedMetrics.get(reader.metricsName))
        val waitingMin = metrics.flatMap(m => Option(m.getAs[Any]("minWaitingMicros"))).map(_.asInstanceOf[Long])
        watermark.foreach { w =>
          val wMicros = Math.multiplyExact(w.getEpochSecond, 1000000L) + w.getNano / 1000
          val progress = math.min(wMicros, waitingMin.getOrElse(Long.MaxValue)) - reader.windowMicros
          report(reader, progress)
        }
      }
    }
  }

  override def onQueryIdle(event: QueryIdleEvent): Unit = ()

  override def onQueryTerminated(event: QueryTerminatedEvent): Unit = {
    val own = readers.remove(event.id)
    if (own != null) own.foreach(r => Try(Coordinator.get.state(r.state).deregisterReader(r.id)))
    val continuousReader = s"${ContinuousFetchReaders.Prefix}${event.id}"
    Coordinator.get.names.foreach { name =>
      Try(Coordinator.get.state(name)).foreach { s => if (s.readerProgress(continuousReader).isDefined) s.deregisterReader(continuousReader) }
    }
  }

  // F never goes back: a report below the reader's current progress (a lower watermark after a
  // restart) is skipped rather than failing the query.
  private def report(reader: Reader, progress: Long): Unit = {
    val state = Coordinator.get.state(reader.state)
    val current = state.readerProgress(reader.id).getOrElse(EventTime.MinusInfinity)
    if (progress > current) {
      state.reportFetchProgress(reader.id, progress)
      logDebug(s"State ${reader.state}: reader ${reader.id} F=${EventTime.show(progress)}")
    }
  }
}

object FetchProgressListener {
  private final case class Reader(id: String, metricsName: String, state: String, windowMicros: Long)

  private val sessions = java.util.Collections.newSetFromMap(new java.util.WeakHashMap[SparkSession, java.lang.Boolean]())

  /** Adds the listener to `spark`'s query manager once. */
  def ensure(spark: SparkSession): Unit = sessions.synchronized {
    if (sessions.add(spark)) spark.streams.addListener(new FetchProgressListener)
  }

  /** (metrics name, state, window) of every fetch join in a query's plan. */
  def joinsIn(plan: org.apache.spark.sql.catalyst.plans.logical.LogicalPlan): Seq[(String, String, Long)] =
    plan.collect { case c: CollectMetrics => c.name }
      .flatMap(n => FetchJoinRows.parseMetricsName(n).map { case (s, w) => (n, s, w) })
}
