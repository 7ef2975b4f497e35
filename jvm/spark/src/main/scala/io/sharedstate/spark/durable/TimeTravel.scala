package io.sharedstate.spark.durable

import io.sharedstate.spark.config.SharedStateConf

import io.sharedstate.spark.rows.{AsOfPairs, StoredPairs}

import io.delta.tables.DeltaTable
import io.sharedstate.core.{EventTime, SharedStateException, State, StateSpec}
import org.apache.spark.sql.SparkSession

/**
 * `as_of(t)` for a time the State in memory may no longer answer (compaction dropped versions older
 * than min(F, U)): a scratch State is rebuilt from the Delta tables with no reader (F = -infinity,
 * nothing compacted while it replays), each partition from its newest restore point taken when U was at or
 * before t (compaction never went past t in it, so each key's newest pair at or before t is in it), or
 * from the start of the changelog while retention has trimmed nothing; then every journal event after
 * it. Its as-of answer at t is the State's. Once retention has trimmed the changelog, a time older
 * than every partition's oldest kept snapshot is an error naming the oldest time still available.
 */
private[sharedstate] object TimeTravel {
  def asOf(spark: SparkSession, spec: StateSpec, log: DeltaChangelog, snapshots: SnapshotTable, time: Long)
      : IndexedSeq[StoredPairs] = {
    // Retention records its trims in the changelog's properties; a table trimmed before that record
    // existed shows a Delta DELETE in its history instead.
    val trimmed = log.trimmedThrough().nonEmpty ||
      DeltaTable.forPath(spark, log.path).history().where("operation = 'DELETE'").limit(1).count() > 0
    if (trimmed) {
      val oldest = (0 until spec.partitions).map(p => snapshots.oldestProgress(p).getOrElse(EventTime.PlusInfinity)).max
      if (time < oldest)
        throw new SharedStateException(s"State '${spec.name}': as of ${EventTime.show(time)} is older " +
          s"than its Delta tables still hold after retention: the oldest time available is ${EventTime.show(oldest)} " +
          s"(raise ${SharedStateConf.SnapshotsRetained.key} to keep more history).")
    }
    val scratch = new State(spec.copy(compactionIntervalMs = 0L))
    try {
      // A read of the tables: it may race the owner's (this application's or another's) retention.
      StateRecovery.replay(scratch, log, Some(snapshots), rejected = None, pick = (t, p) => t.chainAtOrBefore(p, time),
        readsOwnersTables = true)
      (0 until spec.partitions).map(p => AsOfPairs.of(scratch.partition(p), time))
    } finally scratch.close()
  }
}
