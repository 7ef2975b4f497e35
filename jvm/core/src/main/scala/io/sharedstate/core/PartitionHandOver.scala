package io.sharedstate.core

/**
 * Partitions one holder of a State hands to another (a live move between hosts, see
 * [[State.handOver]]): each partition's snapshot (SnapshotCodec: entries and the updates staged
 * for U) and the share of those partitions in the epochs that tasks staged but no commit took yet.
 */
final case class PartitionHandOver(partitions: Array[Int], snapshots: Array[Array[Byte]], staged: Array[StagedShare])

/** The updates of one task's uncommitted batch that fall in the partitions handed over. */
final case class StagedShare(writer: String, epoch: Long, task: Int, keys: Array[Array[Byte]], times: Array[Long],
    values: Array[Array[Byte]]) {
  def batch: UpdateBatch = {
    val b = new UpdateBatch
    var i = 0
    while (i < keys.length) { b.add(keys(i), times(i), values(i)); i += 1 }
    b
  }
}

/**
 * A State's progress without its data: U, F, every writer's progress, status and last committed
 * epoch, every reader's F. A new holder of some partitions starts from it (see [[State.restoreProgress]]),
 * so it computes the same U as the others from the next step on.
 */
final case class ProgressImage(updateProgress: Long, fetchProgress: Long, lastFiniteU: Long, updateWhenEmpty: Long,
    writers: Seq[ProgressImage.Reporter], lastEpochs: Map[String, Long], readers: Seq[ProgressImage.Reporter])

object ProgressImage {
  final case class Reporter(id: String, progress: Long, paused: Boolean, finished: Boolean)
}
