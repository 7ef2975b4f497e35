package io.sharedstate.spark

import io.sharedstate.core.EventTime
import io.sharedstate.spark.distributed.{Cluster, Coordinator}
import java.util.concurrent.{ConcurrentHashMap, Executors}
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.execution.streaming.runtime.{MicroBatchExecution, StreamExecution}
import scala.util.control.NonFatal

/**
 * What a streaming fetch join's micro-batch decides with ([[BatchBound]]: the U it answers below and
 * the F below which a new event is late), fixed on the driver when Spark plans the batch (or when
 * its first task asks, if that comes first), before any task uses it, per (query, join, batch id),
 * in memory and in the query's checkpoint
 * ([[BatchBoundLog]]). Every task of the batch, and every re-run of it (a retried stage, a query
 * restarted from its checkpoint, also by a new driver after a crash), gets the same bound, so a
 * re-run batch answers exactly what its first attempt did and counts the same events late: with an
 * idempotent sink (which keeps the first attempt's output) nothing is lost or emitted twice.
 */
object BatchBounds extends Logging {
  private val bounds = new ConcurrentHashMap[String, BatchBound]()
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

  /**
   * On the driver: the recorded bound of the batch, or the live one recorded as it. F is live only
   * after the query's earlier batches are reported ([[FetchProgressListener.catchUp]]): then the
   * State's F is the recorded one until this batch completes, so nothing a re-run reads was compacted.
   */
  def onDriver(key: String, state: String): BatchBound = {
    // A query id is a UUID and a batch id a number: the join's name is what lies between them.
    val (first, last) = (key.indexOf('|'), key.lastIndexOf('|'))
    val (query, join, batch) = (key.substring(0, first), key.substring(first + 1, last), key.substring(last + 1).toLong)
    val log = Option(logs.get(s"$query|$join"))
    def live: BatchBound = {
      FetchProgressListener.catchUp(query)
      val s = Coordinator.get.state(state)
      BatchBound(s.updateProgress, s.readerProgress(FetchProgressListener.readerId(query, join)).getOrElse(EventTime.MinusInfinity))
    }
    val bound = bounds.computeIfAbsent(key, _ => log.fold(live)(_.getOrAdd(batch, live)))
    if (bounds.remove(BatchBounds.key(query, join, batch - Kept)) != null) log.foreach(_.forget(batch - Kept))
    bound
  }

  // Records bounds as soon as Spark plans a batch, beside the stream thread: the checkpoint write
  // overlaps the batch's first stage instead of holding up its fetch tasks.
  private lazy val preparer = Executors.newSingleThreadExecutor { r =>
    val t = new Thread(r, "sharedstate-batch-bounds"); t.setDaemon(true); t
  }

  /**
   * On the driver's stream thread, when Spark plans a micro-batch's progress stream (its local
   * properties carry the query and batch id): starts recording the batch's bound for `join`. Tasks
   * that ask before it is recorded wait for it (or record it themselves: the first record wins).
   */
  def prepare(join: String, state: String): Unit = {
    val context = SparkSession.active.sparkContext
    for (query <- Option(context.getLocalProperty(StreamExecution.QUERY_ID_KEY));
         batch <- Option(context.getLocalProperty(MicroBatchExecution.BATCH_ID_KEY)))
      prepare(query, join, batch.toLong, state)
  }

  /** Starts recording the bound of (query, join, batch) on the driver, unless it is known already. */
  def prepare(query: String, join: String, batch: Long, state: String): Unit = {
    val k = key(query, join, batch)
    if (!bounds.containsKey(k)) preparer.execute { () =>
      try onDriver(k, state)
      catch { case NonFatal(e) => logWarning(s"Recording the fetch bound of $k failed; its first task will retry", e) }
    }
  }

  /** For tests: returns once every bound prepared so far is recorded (or failed). */
  private[spark] def awaitPrepared(): Unit = preparer.submit(new Runnable { override def run(): Unit = () }).get()

  /** From a task anywhere: on the driver JVM a direct call, on an executor one call to the coordinator. */
  def of(query: String, join: String, batch: Long, state: String): BatchBound = {
    val node = Cluster.node
    if (node == null) onDriver(key(query, join, batch), state) else node.batchBound(key(query, join, batch), state)
  }
}
