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

/** `changelogVersion`: a changelog version that holds every journal event up to `journalSeq` and none after. */
final case class EncodedPartition(bytes: Array[Byte], journalSeq: Long, updateProgress: Long, changelogVersion: Long)

object SnapshotSource {
  /** A State in this JVM and its journal. */
  def local(state: State, journal: DeltaJournal): SnapshotSource = new SnapshotSource {
    override def partitionCount: Int = state.partitionCount
    override def encode(p: Int): EncodedPartition = {
      val (bytes, (seq, version, u)) = state.snapshotPartitionWith(p)((journal.lastSeq, journal.lastVersion, state.updateProgress))
      EncodedPartition(bytes, seq, u, version)
    }
    override def betweenCommits[T](body: => T): T = state.betweenCommits(body)
    override def checkHealthy(): Unit = journal.checkHealthy()
  }
}
