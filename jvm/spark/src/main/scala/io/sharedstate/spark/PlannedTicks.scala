package io.sharedstate.spark

import io.sharedstate.spark.distributed.Cluster
import java.util.concurrent.ConcurrentHashMap

/**
 * The U below which a streaming fetch join's micro-batch answers events: the live U when the batch's
 * first task asks, recorded on the driver per (query, join, batch id). Every task of the batch, and
 * every re-run of it while this driver lives (a retried stage, a query restarted from its checkpoint),
 * gets the same U, so a re-run batch answers exactly what its first attempt did: with an idempotent
 * sink (which keeps the first attempt's output) nothing is lost or emitted twice. A re-run after a
 * driver restart records a new U (see docs/semantics.md, "Re-run batches").
 */
object PlannedTicks {
  private val bounds = new ConcurrentHashMap[String, java.lang.Long]()
  // Batches of a join older than this many are forgotten (Spark re-runs only the last one). A stopped
  // query's entries stay: restarted from its checkpoint (same query id) it re-runs its last batch.
  private val Kept = 8

  private def key(query: String, join: String, batch: Long): String = s"$query|$join|$batch"

  /** On the driver: the recorded U of the batch, or `live` recorded as it. */
  def onDriver(key: String, live: Long): Long = {
    val u = bounds.computeIfAbsent(key, _ => java.lang.Long.valueOf(live)).longValue
    val cut = key.lastIndexOf('|')
    val batch = key.substring(cut + 1).toLong
    bounds.remove(key.substring(0, cut + 1) + (batch - Kept))
    u
  }

  /** From a task anywhere: in local mode a map update, in a cluster one call to the coordinator. */
  def of(query: String, join: String, batch: Long, state: String, live: => Long): Long = {
    val node = Cluster.node
    if (node == null) onDriver(key(query, join, batch), live) else node.plannedTick(key(query, join, batch), state)
  }
}
