package io.sharedstate.spark.durable

/**
 * Where a partition's snapshot chain stands: its full snapshot `baseId`, its newest link `tipId` (the
 * snapshot the partition's change tracking is relative to), how many links it has (the full one
 * included) and their sizes. The snapshotter starts a new chain (a full snapshot) when `links` reaches
 * `spark.sharedstate.snapshot.fullEvery` or the deltas together outgrow the full snapshot.
 */
private[sharedstate] final case class SnapshotChain(baseId: Long, tipId: Long, links: Int, baseBytes: Long,
    deltaBytes: Long) {
  def extended(id: Long, bytes: Long): SnapshotChain =
    copy(tipId = id, links = links + 1, deltaBytes = deltaBytes + bytes)

  /** Whether the next snapshot may be a delta on this chain, at most `fullEvery` links long. */
  def takesDelta(fullEvery: Int): Boolean = links < fullEvery && deltaBytes < baseBytes
}

private[sharedstate] object SnapshotChain {
  def started(id: Long, bytes: Long): SnapshotChain = SnapshotChain(id, id, 1, bytes, 0L)

  /** The chain of stored links, full snapshot first. */
  def of(chain: Seq[StoredSnapshot]): Option[SnapshotChain] = chain.headOption.map { base =>
    chain.tail.foldLeft(started(base.id, base.bytes.length.toLong))((c, d) => c.extended(d.id, d.bytes.length.toLong))
  }
}
