package io.sharedstate.spark.durable

import io.sharedstate.core.State

/**
 * What a snapshot round encodes: each partition at a commit boundary, with the journal position it
 * holds, and a way to run housekeeping between commits. A local State encodes in its own JVM; a
 * cluster State asks the partition's owner (see distributed.DriverState).
 */
trait SnapshotSource {
  def partitionCount: Int

  /** Partition `p` encoded (SnapshotCodec), the order number of the last journal event it holds, and U then. */
  def encode(p: Int): EncodedPartition

  /** Runs `body` while no commit (nor progress event) of the State runs. */
  def betweenCommits[T](body: => T): T

  /** Fails when the State's journal takes no further step (lease lost, rejected-table commit failed). */
  def checkHealthy(): Unit
}

final case class EncodedPartition(bytes: Array[Byte], journalSeq: Long, updateProgress: Long)

object SnapshotSource {
  /** A State in this JVM and its journal. */
  def local(state: State, journal: DeltaJournal): SnapshotSource = new SnapshotSource {
    override def partitionCount: Int = state.partitionCount
    override def encode(p: Int): EncodedPartition = {
      val (bytes, (seq, u)) = state.snapshotPartitionWith(p)((journal.lastSeq, state.updateProgress))
      EncodedPartition(bytes, seq, u)
    }
    override def betweenCommits[T](body: => T): T = state.betweenCommits(body)
    override def checkHealthy(): Unit = journal.checkHealthy()
  }
}
