package io.sharedstate.spark.durable

import io.delta.kernel.data.Row

/**
 * The changelog files a retention trim removes (see [[DeltaChangelog.coveredFiles]]): their remove
 * actions, ready to commit, and their bytes.
 */
private[sharedstate] final case class CoveredFiles(removes: Seq[Row], bytes: Long) {
  def count: Int = removes.size
}

private[sharedstate] object CoveredFiles {
  val Empty: CoveredFiles = CoveredFiles(Nil, 0L)
}
