package io.sharedstate.spark.changes

import java.util.UUID
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper
import org.apache.spark.sql.streaming.{StreamingQuery, StreamingQueryListener, StreamingQueryProgress}
import scala.collection.mutable

/**
 * What the plugin's streaming query listeners (writers, publishing, fetch joins, transactions) share:
 * each is added to a session's query manager once, and each finds its operators in the analysed plan
 * of a query that just started (Spark posts the start on the stream thread, before the first batch).
 */
private[sharedstate] object QueryListeners {
  // Per session (weakly held), the kinds of listener already added to it.
  private val added = new java.util.WeakHashMap[SparkSession, mutable.Set[String]]()

  /** Adds the listener `make` builds to `spark`'s query manager, once per session and `kind`. */
  def ensure(spark: SparkSession, kind: String)(make: => StreamingQueryListener): Unit = added.synchronized {
    val kinds = Option(added.get(spark)).getOrElse { val s = mutable.Set.empty[String]; added.put(spark, s); s }
    if (kinds.add(kind)) spark.streams.addListener(make)
  }

  /** The query `id` of the active session and the nodes `select` finds in its analysed plan (none: None). */
  def nodesOf[N](id: UUID)(select: LogicalPlan => Seq[N]): Option[(StreamingQuery, Seq[N])] =
    Option(SparkSession.active.streams.get(id)).collect { case q: StreamingQueryWrapper =>
      (q, select(q.streamingQuery.analyzedPlan))
    }.filter(_._2.nonEmpty)

  /**
   * The progress of each batch of `query` that ran, after batch `after`, in batch order. A trigger that
   * found no new data runs no batch, yet Spark records a progress for it (every
   * `spark.sql.streaming.noDataProgressEventInterval`, 10 s by default, while the query is idle) carrying
   * the id of the batch that will run next: taking it for that batch would commit or report the batch
   * before it ran. A batch that ran has timed its sink write (`addBatch`).
   */
  def ranBatches(query: StreamingQuery, after: Long): Seq[StreamingQueryProgress] =
    query.recentProgress.filter(p => p.batchId > after && p.durationMs.containsKey("addBatch")).sortBy(_.batchId)
      .toSeq
}
