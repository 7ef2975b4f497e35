package io.sharedstate.spark.write

import io.sharedstate.spark.cluster.{StateAccess, StateClient}
import io.sharedstate.spark.config.UpdateOptions
import io.sharedstate.spark.durable.ChangelogTarget

import io.sharedstate.core.{EventTime, RejectedUpdate, SharedStateException, UpdateBatch}
import io.sharedstate.delivery.Lane
import java.util.concurrent.{ConcurrentHashMap, Executors, ScheduledExecutorService, TimeUnit}
import org.apache.spark.TaskContext
import org.apache.spark.sql.{ForeachWriter, Row}
import org.apache.spark.sql.catalyst.encoders.ExpressionEncoder
import org.apache.spark.sql.execution.streaming.runtime.StreamExecution
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import scala.jdk.CollectionConverters._
import scala.util.control.NonFatal

/**
 * Updates a State from a query in real-time mode (`writeStream.foreach(updater)`; real-time mode
 * allows only the Kafka, foreach, console and memory sinks). A JVM `ForeachWriter[Row]`: each row is
 * bound to its key and value bytes by the sink's [[RowBinder]], with no Python worker on the path.
 *
 * Each input partition is a writer of its own ([[RealtimeWriters]]). A task stages what it read and
 * commits it as a sub-epoch every `flushInterval` (and when the task ends), so an update counts
 * within milliseconds instead of at the end of Spark's epoch (whose length is the trigger's, >= 5 s).
 * Exactly-once: a sub-epoch's number says how many rows of the Spark epoch it covers, so a replayed
 * epoch skips the rows the failed run already committed and `sum` or `append` count nothing twice.
 */
private[sharedstate] final class RealtimeUpdater(
    stateName: String,
    options: Map[String, String],
    flushIntervalMs: Long,
    incarnation: Long,
    changelog: Option[ChangelogTarget],
    deliveryLanes: Boolean = false)
    extends ForeachWriter[Row] {

  @transient private var partition: Int = -1
  @transient private var epoch: Long = -1L
  @transient private var writer: String = _
  @transient private var skip: Long = 0L
  @transient private var read: Long = 0L
  @transient private var batch: UpdateBatch = _
  @transient private var watermark: Long = EventTime.MinusInfinity
  // When the batch's oldest row was staged: it waits at most flushIntervalMs from then to be committed.
  @transient private var firstStagedMs: Long = 0L
  // With delivery lanes on: this updater's lane to the State's reader thread, which commits for it.
  @transient private var lane: Lane[RealtimeLanes.Message] = _
  @transient private var bound: RealtimeUpdater.Bound = _
  @transient private var latestAllowed: Long = Long.MaxValue
  // An error of a commit the flusher thread made: this task fails with it at its next row or at close.
  @transient @volatile private[write] var failed: Throwable = _

  override def open(partitionId: Long, epochId: Long): Boolean = {
    val ctx = TaskContext.get()
    val query = Option(ctx).flatMap(c => Option(c.getLocalProperty(StreamExecution.QUERY_ID_KEY))).getOrElse(
      throw new SharedStateException(s"The real-time updater of State '$stateName' runs only as the foreach " +
        "sink of a streaming query (writeStream.foreach(updater))."))
    partition = partitionId.toInt
    epoch = epochId
    writer = RealtimeWriters.writer(query, partition)
    val last = StateAccess.get.askDriver(RealtimeWriters.Open(stateName, query, ctx.numPartitions(), partition,
        incarnation, RealtimeUpdater.idleTimeoutMicros(options))).longValue
    skip = RealtimeWriters.rowsApplied(epoch, last)
    read = 0L
    batch = new UpdateBatch
    lane = if (deliveryLanes) RealtimeLanes.of(stateName).flushLane().orNull else null
    RealtimeUpdater.Flusher.add(this, flushIntervalMs)
    true
  }

  override def process(row: Row): Unit = synchronized {
    if (failed != null) throw failed
    if (bound == null) {
      bound = RealtimeUpdater.bind(stateName, options, row)
      // Updates further ahead of this task's clock are rejected, so a typo such as 9999-12-31 never moves U.
      if (bound.options.maxAheadMicros != UpdateOptions.NoMaxAhead)
        latestAllowed =
          Math.addExact(Math.multiplyExact(System.currentTimeMillis(), 1000L), bound.options.maxAheadMicros)
    }
    val internal = bound.toInternal(row)
    val o = bound.options
    if (!internal.isNullAt(o.timeOrdinal))
      watermark = math.max(watermark, internal.getLong(o.timeOrdinal) - o.latenessMicros)
    read += 1
    if (read > skip) {
      if (batch.size + batch.rejectedCount == 0) firstStagedMs = System.currentTimeMillis()
      val value = bound.binder.valueBytes(internal)
      if (bound.binder.keyHasNull(internal)) {
        val time =
          if (internal.isNullAt(o.timeOrdinal)) null else java.lang.Long.valueOf(internal.getLong(o.timeOrdinal))
        batch.reject(RejectedUpdate(null, time, value, RejectedUpdate.NullKey, writer, epoch, EventTime.MinusInfinity))
      } else if (internal.isNullAt(o.timeOrdinal)) {
        batch.reject(RejectedUpdate(bound.binder.keyBytes(internal), null, value, RejectedUpdate.NullTime, writer,
            epoch,
            EventTime.MinusInfinity))
      } else if (internal.getLong(o.timeOrdinal) > latestAllowed) {
        batch.reject(RejectedUpdate(bound.binder.keyBytes(internal), internal.getLong(o.timeOrdinal), value,
            RejectedUpdate.AheadOfClock, writer, epoch, EventTime.MinusInfinity))
      } else batch.add(bound.binder.keyBytes(internal), internal.getLong(o.timeOrdinal), value)
      if (due) flush()
    }
  }

  override def close(errorOrNull: Throwable): Unit = {
    RealtimeUpdater.Flusher.remove(this)
    try {
      // A failed task commits nothing more: the epoch's replay starts after its last committed sub-epoch.
      if (failed == null && errorOrNull == null && writer != null) synchronized(flush())
    } finally synchronized {
        // Flushes still in the lane commit before the task ends, failed or not: a replay must see them.
        if (lane != null) {
          val held = lane
          lane = null
          RealtimeLanes.of(stateName).drainAndRelease(held)
        }
      }
    if (failed != null) throw failed
  }

  private def due: Boolean =
    batch != null && batch.size + batch.rejectedCount > 0 && System.currentTimeMillis() - firstStagedMs >= flushIntervalMs

  /** The flusher's tick: commits the batch once its oldest row waited an interval. */
  private[write] def flushIfDue(): Unit = synchronized(if (due) flush())

  // Commits the rows read since the last commit as the sub-epoch ending at `read`: here, or through
  // the lane by the State's reader thread (in order with this updater's earlier flushes).
  private def flush(): Unit = {
    if (batch.size + batch.rejectedCount == 0) return
    val sub = RealtimeWriters.subEpoch(epoch, read)
    if (lane != null) lane.send(RealtimeLanes.Flush(this, sub, batch, watermark))
    else commit(sub, batch, watermark)
    batch = new UpdateBatch
  }

  /** Stages `rows` and commits them as sub-epoch `sub` of this partition's writer. */
  private[write] def commit(sub: Long, rows: UpdateBatch, mark: Long): Unit = {
    val files = changelog.map(_.writeTask(writer, sub, partition, rows)).getOrElse(Nil)
    StateClient.of(stateName).stage(writer, sub, partition, rows)
    StateAccess.get.askDriver(RealtimeWriters.Commit.of(stateName, writer, sub, mark, files))
  }
}

private[sharedstate] object RealtimeUpdater {

  /** The options bound to the rows' schema, and the converter from external rows. */
  private final class Bound(val options: UpdateOptions, val binder: RowBinder,
      val toInternal: ExpressionEncoder.Serializer[Row])

  private def bind(stateName: String, options: Map[String, String], row: Row): Bound = {
    val schema = Option(row.schema).getOrElse(throw new SharedStateException(
        s"The real-time updater of State '$stateName' got a row without a schema; use it as writeStream.foreach(...)."))
    val spec = StateClient.of(stateName).spec
    val parsed = UpdateOptions.parse(new CaseInsensitiveStringMap(options.asJava), schema, spec)
    new Bound(parsed, new RowBinder(schema, parsed.keyOrdinals, parsed.valueOrdinals),
      ExpressionEncoder(schema).createSerializer())
  }

  /** Checks the options a driver can check without the rows' schema: names, required ones, durations. */
  def checkOptions(stateName: String, options: Map[String, String]): Unit = {
    val unknown = options.keySet.filterNot(k => UpdateOptions.Known.exists(_.equalsIgnoreCase(k)))
    if (unknown.nonEmpty) throw new SharedStateException(s"Unknown option(s) ${unknown.toSeq.sorted.mkString(", ")} " +
      s"for the real-time updater of State '$stateName'. Supported: ${UpdateOptions.Known.toSeq.sorted.mkString(", ")}.")
    idleTimeoutMicros(options) // a bad idleTimeout fails here, on the driver, naming the option
    Seq(UpdateOptions.Key, UpdateOptions.Time).foreach { k =>
      if (!options.exists { case (name, v) => name.equalsIgnoreCase(k) && v.trim.nonEmpty })
        throw new SharedStateException(
          s"Option '$k' is required for the real-time updater of State '$stateName'.")
    }
  }

  /** The `idleTimeout` option in microseconds, or [[UpdateOptions.NoIdleTimeout]]. */
  def idleTimeoutMicros(options: Map[String, String]): Long =
    UpdateOptions.idleTimeoutMicros(new CaseInsensitiveStringMap(options.asJava))

  /** One daemon thread per JVM commits every open updater's staged rows once they waited an interval. */
  private object Flusher {
    private val open = ConcurrentHashMap.newKeySet[RealtimeUpdater]()
    @volatile private var tickMs = Long.MaxValue
    private lazy val ticker: ScheduledExecutorService = Executors.newSingleThreadScheduledExecutor { (r: Runnable) =>
      val t = new Thread(r, "sharedstate-realtime-flush"); t.setDaemon(true); t
    }

    // Ticks at a quarter of the shortest interval (1 ms at least): a row waits its interval, plus a quarter.
    def add(u: RealtimeUpdater, intervalMs: Long): Unit = synchronized {
      open.add(u)
      val every = math.max(1L, intervalMs / 4)
      if (every < tickMs) {
        tickMs = every
        ticker.scheduleWithFixedDelay(() => tick(), every, every, TimeUnit.MILLISECONDS)
      }
    }

    def remove(u: RealtimeUpdater): Unit = open.remove(u)

    // A failed commit fails the task at its next row or at close; the ticker itself keeps going.
    private def tick(): Unit = open.asScala.foreach { u =>
      try u.flushIfDue()
      catch { case NonFatal(e) => u.failed = e; open.remove(u) }
    }
  }
}
