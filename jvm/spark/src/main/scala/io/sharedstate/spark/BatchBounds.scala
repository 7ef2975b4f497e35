package io.sharedstate.spark

import io.sharedstate.spark.distributed.Cluster
import java.util.concurrent.ConcurrentHashMap
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path

/**
 * The U below which a streaming fetch join's micro-batch answers events: the live U when the batch's
 * first task asks, recorded on the driver per (query, join, batch id) before any task uses it, in
 * memory and in the query's checkpoint ([[BatchBoundLog]]). Every task of the batch, and every re-run
 * of it (a retried stage, a query restarted from its checkpoint, also by a new driver after a crash),
 * gets the same U, so a re-run batch answers exactly what its first attempt did: with an idempotent
 * sink (which keeps the first attempt's output) nothing is lost or emitted twice.
 */
object BatchBounds {
  private val bounds = new ConcurrentHashMap[String, java.lang.Long]()
  private val logs = new ConcurrentHashMap[String, BatchBoundLog]() // "query|join" -> its log
  // Batches of a join older than this many are forgotten (Spark re-runs only the last one). A stopped
  // query's entries stay: restarted from its checkpoint (same query id) it re-runs its last batch.
  private val Kept = 8

  def key(query: String, join: String, batch: Long): String = s"$query|$join|$batch"

  /**
   * On the driver, when a query plans the join's progress stream (the stream thread, which carries
   * the query id): its bounds are kept under the stream's checkpoint directory from now on.
   */
  def register(query: String, join: String, checkpointLocation: String, conf: Configuration): Unit = {
    val log = new BatchBoundLog(new Path(checkpointLocation, "fetch-bounds"), conf)
    log.latest.foreach(last => log.forgetBefore(last - Kept))
    logs.put(s"$query|$join", log)
  }

  /** On the driver: the recorded U of the batch, or `live` recorded as it. */
  def onDriver(key: String, live: => Long): Long = {
    val cut = key.lastIndexOf('|')
    val batch = key.substring(cut + 1).toLong
    val log = Option(logs.get(key.substring(0, cut)))
    val u = bounds.computeIfAbsent(key, _ => java.lang.Long.valueOf(log.fold(live)(_.getOrAdd(batch, live)))).longValue
    if (bounds.remove(key.substring(0, cut + 1) + (batch - Kept)) != null) log.foreach(_.forget(batch - Kept))
    u
  }

  /** From a task anywhere: in local mode a map update, in a cluster one call to the coordinator. */
  def of(query: String, join: String, batch: Long, state: String, live: => Long): Long = {
    val node = Cluster.node
    if (node == null) onDriver(key(query, join, batch), live) else node.batchBound(key(query, join, batch), state)
  }
}
