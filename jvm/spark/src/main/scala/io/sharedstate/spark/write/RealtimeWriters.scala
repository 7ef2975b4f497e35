package io.sharedstate.spark.write

import io.sharedstate.spark.cluster.{Coordinator, DriverRequest, Incarnations}
import io.sharedstate.spark.config.UpdateOptions
import io.sharedstate.spark.durable.ChangelogFile

import io.sharedstate.core.EventTime

/**
 * The driver side of real-time updaters ([[RealtimeUpdater]]). A real-time query's input partitions
 * commit independently and often (every few ms), so each partition is a writer of its own,
 * `<query id>#p<partition>`: its epochs stay monotone without coordinating the tasks, and U is the
 * minimum over the partitions' watermarks. The tasks reach the driver through [[DriverRequest]]s,
 * which run in place on a local driver and travel to the coordinator from an executor.
 */
private[sharedstate] object RealtimeWriters {
  val Separator = "#p"

  def writer(query: String, partition: Int): String = s"$query$Separator$partition"

  /** A writer name belongs to the real-time query `query`. */
  def isPartitionOf(writer: String, query: String): Boolean = writer.startsWith(query + Separator)

  /**
   * A sub-epoch: the Spark epoch in the high 32 bits, the number of rows the partition had read in
   * that epoch when it committed in the low 32. Monotone per partition writer, and it says how far a
   * replay of the epoch already counts.
   */
  def subEpoch(sparkEpoch: Long, rowsRead: Long): Long = {
    require(sparkEpoch >= 0 && sparkEpoch < (1L << 31), s"epoch $sparkEpoch out of range for a real-time updater")
    require(rowsRead >= 0 && rowsRead < (1L << 32), s"$rowsRead rows in one epoch of one partition: too many")
    (sparkEpoch << 32) | rowsRead
  }

  /** Rows of `sparkEpoch` already applied by an earlier run, given the writer's last committed sub-epoch. */
  def rowsApplied(sparkEpoch: Long, lastCommitted: Long): Long =
    if (lastCommitted < 0) 0L
    else {
      val committedEpoch = lastCommitted >>> 32
      if (committedEpoch == sparkEpoch) lastCommitted & 0xffffffffL
      else if (committedEpoch > sparkEpoch) Long.MaxValue // a later epoch committed: all of this one counts already
      else 0L
    }

  /**
   * A task of the query opens `partition` of an epoch: every partition writer of the query that is
   * not running yet is registered (so U waits for all of them from the first open on; a stopped
   * query's writers resume with their progress) and the partition's last committed sub-epoch is
   * returned. A running one is left as it is: every epoch opens every partition again, and that must
   * not wake a writer its `idleTimeout` paused (only its input does, at a commit).
   */
  final case class Open(state: String, query: String, partitions: Int, partition: Int, incarnation: Long,
      idleTimeoutMicros: Long = UpdateOptions.NoIdleTimeout)
      extends DriverRequest[java.lang.Long] {
    override def onDriver(): java.lang.Long = {
      val controller = Coordinator.get.state(state)
      if (incarnation >= 0) Incarnations.check(state, incarnation, controller.incarnation, "real-time updater")
      (0 until partitions).foreach(p => WriterLifecycle.startedOnce(state, writer(query, p), idleTimeoutMicros))
      controller.lastCommittedEpoch(writer(query, partition))
    }
  }

  /**
   * Commits one sub-epoch of a partition writer, which the task staged just before; its progress is
   * its event-time watermark, never lower than before. Returns U after the commit. A durable State's
   * changelog files travel as plain tuples, which the RPC allow-list (`cluster.MessageAllowList`)
   * accepts from an executor.
   */
  final case class Commit(state: String, writer: String, subEpoch: Long, watermark: Long,
      files: Seq[(Int, String, Long, Long)])
      extends DriverRequest[java.lang.Long] {
    override def onDriver(): java.lang.Long = {
      // A commit carries input: a partition writer its idleTimeout paused rejoins (at the current U) first.
      WriterLifecycle.input(state, writer)
      val controller = Coordinator.get.state(state)
      val previous = controller.writerProgress(writer).getOrElse(EventTime.MinusInfinity)
      val payload = files.map { case (p, path, size, time) => ChangelogFile(p, path, size, time) }
      controller.commitEpoch(writer, subEpoch, math.max(previous, watermark), payload = payload).updateProgress
    }
  }

  object Commit {
    def of(state: String, writer: String, subEpoch: Long, watermark: Long, files: Seq[ChangelogFile]): Commit =
      Commit(state, writer, subEpoch, watermark, files.map(f => (f.partition, f.path, f.size, f.modificationTime)))
  }
}
