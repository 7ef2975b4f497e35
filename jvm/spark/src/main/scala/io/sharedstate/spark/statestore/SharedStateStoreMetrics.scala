package io.sharedstate.spark.statestore

import org.apache.spark.sql.execution.streaming.state.{
  StateStoreCustomMetric,
  StateStoreCustomSizeMetric,
  StateStoreCustomSumMetric,
  StateStoreCustomTimingMetric
}

/** The provider's own metrics, shown under `stateOperators[].customMetrics` in the query progress. */
private[sharedstate] object SharedStateStoreMetrics {
  val ChangelogBytes: StateStoreCustomMetric =
    StateStoreCustomSizeMetric("sharedstateChangelogBytes", "bytes of the changelog files written by the commit")
  val ChangedKeys: StateStoreCustomMetric =
    StateStoreCustomSumMetric("sharedstateChangedKeys", "keys put or removed by the commit")
  val CommitDurationMs: StateStoreCustomMetric =
    StateStoreCustomTimingMetric("sharedstateCommitMs", "time to make the version durable (write + rename)")
  val LoadedFromFiles: StateStoreCustomMetric =
    StateStoreCustomSumMetric("sharedstateLoadsFromFiles", "stores rebuilt from snapshot + changelogs (not in memory)")

  // Spark's own name (HDFS provider): stores whose commit was asked to write a snapshot.
  val ForceSnapshot: StateStoreCustomMetric =
    StateStoreCustomSumMetric("forceSnapshotCount", "number of stores that had forced snapshot")

  val All: Seq[StateStoreCustomMetric] =
    Seq(ChangelogBytes, ChangedKeys, CommitDurationMs, LoadedFromFiles, ForceSnapshot)
}
