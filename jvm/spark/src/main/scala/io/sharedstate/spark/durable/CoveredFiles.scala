package io.sharedstate.spark.durable

import io.delta.kernel.data.Row

/**
 * The files a retention step removes (the changelog files a trim covers, [[DeltaChangelog.coveredFiles]];
 * older snapshots' files, [[SnapshotTable.removeOlderThan]]): their remove actions and their bytes.
 */
private[sharedstate] final case class CoveredFiles(removes: Seq[Row], bytes: Long) {
  def count: Int = removes.size
}

private[sharedstate] object CoveredFiles {
  val Empty: CoveredFiles = CoveredFiles(Nil, 0L)
}
