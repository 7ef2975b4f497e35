package io.sharedstate.spark.fetch.batch

import io.sharedstate.core.EventTime
import io.sharedstate.spark.changes.QueryListeners
import io.sharedstate.spark.cluster.Coordinator
import java.time.Instant
import java.util.concurrent.ConcurrentHashMap
import org.apache.spark.internal.Logging
import org.apache.spark.sql.streaming.{StreamingQuery, StreamingQueryProgress}
import scala.util.Try

/**
 * The fetch progress F of a running query's micro-batch fetch joins. Each join is a reader of its
 * State (registered by fetch.FetchProgressListener when the query starts); the reader id is the
 * query id, stable across restarts from a checkpoint, plus the join. A join with a lateness reports,
 * after every batch, F = min(latest event time seen - lateness, earliest event still waiting, the
 * batch's watermark) - window. No later fetch of the query reads below it: events that would are
 * counted as late and not fetched; an event still waiting in a key the batch did not touch has a
 * reply time at or after the watermark (its timeout has not fired), and waiting events of touched
 * keys are in the batch's metrics. Compaction may then drop what is older. A join without a lateness
 * never advances its F, which keeps every version of the State.
 */
private[sharedstate] object FetchJoinProgress extends Logging {

  /** A join's reader; it reports F when it has a lateness (-1: none) or its events have a watermark. */
  final case class Reader(id: String, metricsName: String, state: String, windowMicros: Long, latenessMicros: Long,
      watermarked: Boolean = false) {
    def reportsProgress: Boolean = latenessMicros >= 0 || watermarked
    var maxSeen: Long = Long.MinValue
  }

  // A running query's fetch joins and the last batch whose progress they reported.
  private final class Tracked(val query: StreamingQuery, val readers: Seq[Reader]) { var applied: Long = -1L }

  private val tracked = new ConcurrentHashMap[String, Tracked]()

  def track(queryId: String, query: StreamingQuery, readers: Seq[Reader]): Unit =
    tracked.put(queryId, new Tracked(query, readers))

  def untrack(queryId: String): Seq[Reader] = Option(tracked.remove(queryId)).map(_.readers).getOrElse(Nil)

  /**
   * Reports F of the query's joins with a lateness from every batch of the query that completed and is
   * not reported yet, in batch order. The listener calls it after each batch (asynchronously); recording a
   * batch's bound calls it (through [[BatchBounds]]) before its F is recorded, so the recorded F includes
   * every earlier batch and the State's F stays there until this batch completes.
   */
  def catchUp(queryId: String): Unit = Option(tracked.get(queryId)).foreach { t =>
    t.synchronized {
      QueryListeners.ranBatches(t.query, t.applied).foreach { p =>
        report(t.readers, p)
        t.applied = p.batchId
      }
    }
  }

  // F = min(latest event time seen - lateness, earliest event still waiting, the batch's watermark) - window.
  private def report(readers: Seq[Reader], progress: StreamingQueryProgress): Unit = {
    val watermark = Option(progress.eventTime.get("watermark")).flatMap(w => Try(Instant.parse(w)).toOption)
      .map(w => Math.multiplyExact(w.getEpochSecond, 1000000L) + w.getNano / 1000)
    readers.filter(_.reportsProgress).foreach { reader =>
      val metrics = Option(progress.observedMetrics.get(reader.metricsName))
      def metric(name: String): Option[Long] =
        metrics.flatMap(m => Option(m.getAs[Any](name))).map(_.asInstanceOf[Long])
      metric("maxEventMicros").foreach(m => reader.maxSeen = math.max(reader.maxSeen, m))
      // With a lateness, from the latest event seen; with only the events' watermark, from it (the
      // query's watermark is the minimum of the events' and the progress ticks', so never above U).
      val seen = if (reader.latenessMicros >= 0 && reader.maxSeen != Long.MinValue) {
        Some(reader.maxSeen - reader.latenessMicros)
      } else None
      if (seen.isDefined || (reader.watermarked && watermark.isDefined)) {
        val bound = Seq(seen, metric("minWaitingMicros"), watermark).flatten.min
        advance(reader, bound - reader.windowMicros)
      }
    }
  }

  // F never goes back: a lower bound than the reader's current progress (after a restart) is skipped.
  private def advance(reader: Reader, progress: Long): Unit = {
    val state = Coordinator.get.state(reader.state)
    val current = state.readerProgress(reader.id).getOrElse(EventTime.MinusInfinity)
    if (progress > current) {
      state.reportFetchProgress(reader.id, progress)
      logDebug(s"State ${reader.state}: reader ${reader.id} F=${EventTime.show(progress)}")
    }
  }

  def readerId(queryId: String, join: String): String = s"fetch-join:$queryId:$join"
}
