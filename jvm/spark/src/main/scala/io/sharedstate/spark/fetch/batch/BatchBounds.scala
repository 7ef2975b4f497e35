package io.sharedstate.spark.fetch.batch

import io.sharedstate.spark.cluster.{Coordinator, DriverRequest, StateAccess}

import io.sharedstate.core.{EventTime, SharedStateException}
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
 * ([[BatchBoundLog]]), with the waiting events the batch takes over ([[WaitingEventFiles]]). Every
 * task of the batch, and every re-run of it (a retried stage, a query
 * restarted from its checkpoint, also by a new driver after a crash), gets the same bound, so a
 * re-run batch answers exactly what its first attempt did and counts the same events late: with an
 * idempotent sink (which keeps the first attempt's output) nothing is lost or emitted twice.
 */
private[sharedstate] object BatchBounds extends Logging {
  private val bounds = new ConcurrentHashMap[String, BatchBound]()
  private final case class Registered(log: BatchBoundLog, waiting: WaitingEventFiles)
  private val joins = new ConcurrentHashMap[String, Registered]() // "query|join" -> its checkpoint files
  // Batches of a join older than this many are forgotten (Spark re-runs only the last one). A stopped
  // query's entries stay: restarted from its checkpoint (same query id) it re-runs its last batch.
  private val Kept = 8

  def key(query: String, join: String, batch: Long): String = s"$query|$join|$batch"

  /**
   * On the driver, when a query plans the join's progress stream (the stream thread, which carries
   * the query id): its bounds and waiting events are kept under the stream's checkpoint directory
   * from now on. Refuses a checkpoint whose join ran before but has no waiting-events directory: an
   * earlier build kept waiting events in Spark's operator state, which this one does not read.
   */
  def register(query: String, join: String, checkpointLocation: String, conf: Configuration): Unit = {
    val log = new BatchBoundLog(new Path(checkpointLocation, "fetch-bounds"), conf)
    val waiting = new WaitingEventFiles(new Path(checkpointLocation, "fetch-waiting"), conf)
    val latest = log.latest
    if (latest.nonEmpty && !waiting.exists) throw new SharedStateException(
      s"Fetch join: the checkpoint at $checkpointLocation was written by an earlier sharedstate build, which kept " +
        "waiting events in Spark's operator state; this build keeps them in fetch-waiting/ and cannot take them " +
        "over. Start the query with a new checkpointLocation.")
    waiting.create()
    latest.foreach(last => log.forgetBefore(last - Kept))
    joins.put(s"$query|$join", Registered(log, waiting))
    // A restart in this driver (the same query id) is a new run: its first batch empties the batch's
    // waiting-events directory again, as a new driver would, before its tasks write there (possibly
    // in another number of files than the failed run's). The stopped run's queued preparations land
    // first, so none of them records a bound after this.
    awaitPrepared()
    val prefix = s"$query|$join|"
    bounds.keySet.removeIf(k => k.startsWith(prefix) && k.substring(prefix.length).toLongOption.isDefined)
  }

  /** [[register]] from the query's stream thread (which carries the query id), as Spark plans the join's tick source. */
  def registerFromStream(join: String, checkpointLocation: String): Unit = {
    val session = SparkSession.active
    Option(session.sparkContext.getLocalProperty(StreamExecution.QUERY_ID_KEY)).foreach { query =>
      register(query, join, checkpointLocation, session.sessionState.newHadoopConf())
    }
  }

  /**
   * On the driver: the recorded bound of the batch, or the live one recorded as it. F is live only
   * after the query's earlier batches are reported ([[FetchJoinProgress.catchUp]]): then the
   * State's F is the recorded one until this batch completes, so nothing a re-run reads was compacted.
   * The first time this run of the query (in this driver) sees the batch it also drops what an earlier attempt of it left in the
   * waiting-events directory (its tasks write there), and the waiting events of batches before the one it
   * takes over.
   */
  def onDriver(key: String, state: String): BatchBound = {
    // A query id is a UUID and a batch id a number: the join's name is what lies between them.
    val (first, last) = (key.indexOf('|'), key.lastIndexOf('|'))
    val (query, join, batch) = (key.substring(0, first), key.substring(first + 1, last), key.substring(last + 1).toLong)
    val registered = Option(joins.get(s"$query|$join")).getOrElse(throw new IllegalStateException(
        s"Fetch join $join of query $query has no checkpoint directory: its progress stream was not planned on this driver."))
    def live: BatchBound = {
      FetchJoinProgress.catchUp(query)
      val s = Coordinator.get.state(state)
      val (previous, parts) = registered.waiting.previous(batch)
      BatchBound(s.updateProgress,
        s.readerProgress(FetchJoinProgress.readerId(query, join)).getOrElse(EventTime.MinusInfinity),
        previous, parts)
    }
    val bound = bounds.computeIfAbsent(
      key,
      _ => {
        val b = registered.log.getOrAdd(batch, live)
        registered.waiting.reset(batch)
        registered.waiting.forgetBefore(b.previous)
        b.copy(waitingDir = registered.waiting.dir.toString)
      }
    )
    if (bounds.remove(BatchBounds.key(query, join, batch - Kept)) != null) registered.log.forget(batch - Kept)
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
  def prepare(join: String, state: String): Unit =
    microBatch(SparkSession.active.sparkContext.getLocalProperty).foreach { case (query, batch) =>
      prepare(query, join, batch, state)
    }

  /** The query and micro-batch id in Spark's local properties (the driver's, or a task's), if any. */
  def microBatch(property: String => String): Option[(String, Long)] =
    for (query <- Option(property(StreamExecution.QUERY_ID_KEY));
      batch <- Option(property(MicroBatchExecution.BATCH_ID_KEY))) yield (query, batch.toLong)

  /** Starts recording the bound of (query, join, batch) on the driver, unless it is known already. */
  def prepare(query: String, join: String, batch: Long, state: String): Unit = {
    val k = key(query, join, batch)
    if (!bounds.containsKey(k)) preparer.execute { () =>
      try onDriver(k, state)
      catch { case NonFatal(e) => logWarning(s"Recording the fetch bound of $k failed; its first task will retry", e) }
    }
  }

  /** Returns once every bound prepared so far is recorded (or failed). */
  private[spark] def awaitPrepared(): Unit = preparer.submit(new Runnable { override def run(): Unit = () }).get()

  /** From a task anywhere: on the driver JVM a direct call, on an executor one call to the coordinator. */
  def of(query: String, join: String, batch: Long, state: String): BatchBound =
    StateAccess.get.askDriver(BoundRequest(key(query, join, batch), state))

  /** The bound of batch `key` of a join on `state`, asked from a task (see [[onDriver]]). */
  private final case class BoundRequest(key: String, state: String) extends DriverRequest[BatchBound] {
    override def onDriver(): BatchBound = BatchBounds.onDriver(key, state)
  }
}
