package io.sharedstate.spark.durable

import io.sharedstate.core.State
import io.sharedstate.core.codec.SnapshotPass

/**
 * What a snapshot round encodes: each partition at a commit boundary, with the journal position it
 * holds, and a way to run housekeeping between commits. A local State encodes in its own JVM; a
 * cluster State asks the partition's owner (see cluster.ClusterStateController).
 */
private[sharedstate] trait SnapshotSource {
  def partitionCount: Int

  /**
   * Whether the partitions track their changed keys, so [[encode]] can take delta snapshots: each
   * encode then starts the next delta afresh (relative to what it encoded).
   */
  def tracksChanges: Boolean = false

  /**
   * Partition `p` encoded (SnapshotCodec), the order number of the last journal event it holds, and U
   * then. `delta` (only when [[tracksChanges]]): only the keys changed since the previous encode of `p`,
   * whose stored snapshot is `parent` (a source may answer with a full snapshot: see `EncodedPartition.delta`).
   * If the result is not stored, call its `unstored` so the next delta still holds its keys; once stored, its `stored`.
   */
  def encode(p: Int, delta: Boolean, parent: Long): EncodedPartition

  /** Updates partition `p` has applied so far (a running count), or -1 when not known here (cluster hosts). */
  def updatesApplied(p: Int): Long = -1L

  /** Runs `body` while no commit (nor progress event) of the State runs. */
  def betweenCommits[T](body: => T): T

  /** Fails when the State's journal takes no further step (lease lost, rejected-table commit failed). */
  def checkHealthy(): Unit
}

/**
 * An encoded partition: `blocks`, end to end, are its SnapshotCodec bytes (stored as they are, never
 * copied into one array). `changelogVersion`: a changelog version that holds every journal event up to `journalSeq` and none
 * after. `delta`: it holds only the keys changed since the previous encode (`entries` of them).
 * `unstored`: hands the changed keys it took back to the partition (it was not stored); `stored`:
 * tells the source it was stored (a cluster host takes its next delta on it).
 * `lockWaitNanos`/`captureNanos`/`encodeNanos` (0 when not measured): waiting for the commit lock,
 * capturing under it (writers wait meanwhile), encoding after it.
 */
private[sharedstate] final case class EncodedPartition(blocks: IndexedSeq[Array[Byte]], journalSeq: Long,
    updateProgress: Long, changelogVersion: Long,
    delta: Boolean = false, entries: Int = -1, unstored: () => Unit = () => (), lockWaitNanos: Long = 0L,
    captureNanos: Long = 0L, encodeNanos: Long = 0L, stored: () => Unit = () => ()) {

  /** The encoding's length (its blocks end to end are the SnapshotCodec bytes). */
  def size: Long = blocks.iterator.map(_.length.toLong).sum
}

private[sharedstate] object SnapshotSource {

  /** A State in this JVM and its journal. */
  def local(state: State, journal: DeltaJournal): SnapshotSource = new SnapshotSource {
    override def partitionCount: Int = state.partitionCount
    // Decided once (recovery starts the tracking of an owner that keeps chains): while a round runs, a
    // partition that does not keep chains tracks for the length of its own pass (SnapshotPass).
    private val chains = (0 until state.partitionCount).forall(state.partition(_).tracksChanges)
    override def tracksChanges: Boolean = chains
    // Encoded in one pass over the live partition, exact at the commit boundary it ends at (SnapshotPass):
    // writers wait only for the pass's two boundaries.
    override def encode(p: Int, delta: Boolean, parent: Long): EncodedPartition = {
      val (e, (seq, version, u)) = SnapshotPass.encode(state, p, delta, startChain = tracksChanges)(
        (journal.lastSeq, journal.lastVersion, state.updateProgress))
      EncodedPartition(
        e.blocks.toIndexedSeq,
        seq,
        u,
        version,
        e.delta,
        e.entries,
        () => SnapshotPass.returnChanged(state, e),
        lockWaitNanos = e.lockWaitNanos,
        captureNanos = e.lockedNanos,
        encodeNanos = e.encodeNanos
      )
    }
    override def updatesApplied(p: Int): Long = state.partition(p).updatesApplied
    override def betweenCommits[T](body: => T): T = state.betweenCommits(body)
    override def checkHealthy(): Unit = journal.checkHealthy()
  }
}
