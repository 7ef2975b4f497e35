package io.sharedstate.spark.durable

import io.sharedstate.core.{RejectedUpdate, State, UpdateBatch}
import org.apache.spark.util.SerializableConfiguration

/**
 * Where a cluster host rebuilds State partitions from: the State's changelog and snapshots tables
 * (their paths and the Hadoop configuration, sent with the hosting message). The tables must be on a
 * file system every executor sees. Read with Delta Kernel on the host; the host never writes them, nor creates a missing one.
 */
private[sharedstate] final case class PartitionSource(changelogPath: String, snapshotsPath: String,
    hadoopConf: SerializableConfiguration) {
  @transient private lazy val log = DeltaChangelog.open(changelogPath, hadoopConf.value)
  @transient private lazy val snapshots = SnapshotTable.open(snapshotsPath, hadoopConf.value)

  /**
   * Rebuilds `partitions` of the fresh `state` from their latest snapshots and the changelog after
   * them, replaying every journal event (so the State's progress is the journal's). Returns what the
   * replay rejected in these partitions, each with its journal event.
   */
  def rebuild(state: State, partitions: Set[Int]): Seq[(Long, RejectedUpdate)] =
    StateRecovery.replay(state, log, Some(snapshots), rejected = None, rebuilds = partitions).rejections

  /** The updates `writer` sent to `partitions` in `epoch`, per task (the epoch must be in the changelog). */
  def epochTasks(partitionCount: Int, partitions: Seq[Int], writer: String, epoch: Long): Seq[(Int, UpdateBatch)] =
    StateRecovery.epochTasks(log, partitionCount, partitions, writer, epoch)
}

private[sharedstate] object PartitionSource {
  def of(tables: DurableTables): PartitionSource =
    PartitionSource(tables.log.path, tables.snapshots.path, tables.target.hadoopConf)
}
