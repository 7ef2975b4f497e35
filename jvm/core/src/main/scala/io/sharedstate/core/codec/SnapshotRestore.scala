package io.sharedstate.core.codec

import io.sharedstate.core.{Key, SharedStateException, State, StatePartition, ValueSet}

/**
 * Loads a partition's snapshot chain (its full snapshot, then its deltas in order, each the
 * SnapshotCodec bytes) straight into a State that is not in use yet (a recovery): each entry goes
 * into the partition as it is decoded (no decoded copy of the partition is held), a delta's entries
 * replacing those of their keys and its staged updates those of the link before. It takes no lock
 * and touches only that partition, so a recovery loads its partitions in parallel; the partition is
 * sized for the full snapshot's entries first. Each link's checksum is verified before it is read.
 */
object SnapshotRestore {

  def loadChain(state: State, links: Seq[Array[Byte]]): Unit = {
    var partition = -1
    links.zipWithIndex.foreach { case (bytes, i) =>
      val loader = new Loader(state, i, partition, links.size)
      SnapshotCodec.readInto(bytes, loader)
      partition = loader.partition
    }
  }

  private final class Loader(state: State, link: Int, chainPartition: Int, links: Int)
      extends SnapshotCodec.Sink[Unit] {
    private var p: StatePartition = _
    def partition: Int = p.id
    def header(name: String, partition: Int, partitionCount: Int, u: Long, delta: Boolean, entries: Int): Unit = {
      if (partitionCount != state.partitionCount || partition < 0 || partition >= state.partitionCount)
        throw new SharedStateException(s"Snapshot of partition $partition of $partitionCount does not fit State " +
          s"'${state.name}' with ${state.partitionCount} partitions.")
      if (delta != (link > 0) || (chainPartition >= 0 && partition != chainPartition))
        throw new SharedStateException(s"State '${state.name}': a snapshot chain is one partition's full snapshot " +
          s"followed by its deltas, got link ${link + 1} of $links: partition $partition ${if (delta) "delta"
            else "full"}.")
      p = state.partition(partition)
      if (delta) p.clearStaged() else p.reserveKeys(entries)
    }
    def entry(key: Key, set: ValueSet): Unit = p.restore(key, set)
    def staged(key: Key, time: Long, value: Array[Byte]): Unit = p.stage(key, time, value)
    def result(): Unit = ()
  }
}
