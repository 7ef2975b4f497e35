package io.sharedstate.spark

import io.sharedstate.spark.distributed.Cluster
import java.util.concurrent.ConcurrentHashMap
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution

/**
 * The U each streaming fetch join's current micro-batch was planned with: the end offset of its
 * progress stream, recorded on the driver when the batch is planned (a re-run batch is planned from
 * the offset log, so with the same U). The join answers an event in a batch only if its reply time is
 * below that U, never below the live U, so a re-run batch emits exactly what its first attempt did:
 * with an idempotent sink (which keeps the first attempt's output), nothing is lost or duplicated.
 */
object PlannedTicks {
  private val planned = new ConcurrentHashMap[String, java.lang.Long]()

  private def key(query: String, join: String): String = s"$query|$join"

  /** Called on the stream's own thread while it plans a batch (where the query id is set). */
  def record(join: String, u: Long): Unit =
    currentQuery.foreach(q => planned.put(key(q, join), u))

  /** On the driver: the U the batch of `join` in `query` was planned with. */
  def onDriver(key: String): Option[Long] = Option(planned.get(key)).map(_.longValue)

  /** From a task anywhere: in local mode a map read, in a cluster one call to the coordinator. */
  def of(query: String, join: String): Option[Long] = {
    val node = Cluster.node
    if (node == null) onDriver(key(query, join)) else node.plannedTick(key(query, join))
  }

  /** Forgets a stopped query's joins. */
  def forget(query: String): Unit = planned.keySet.removeIf(_.startsWith(query + "|"))

  private def currentQuery: Option[String] =
    SparkSession.getActiveSession.orElse(SparkSession.getDefaultSession).flatMap(s => Option(s.sparkContext.getLocalProperty(StreamExecution.QUERY_ID_KEY)))
}
