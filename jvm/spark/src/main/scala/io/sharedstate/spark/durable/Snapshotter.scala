package io.sharedstate.spark.durable

import io.delta.tables.DeltaTable
import io.sharedstate.spark.durable.ChangelogSchema.{Events, JournalPartition}
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession

/** What one snapshot round did. */
final case class SnapshotRound(written: Int, unchanged: Int, snapshotsRemoved: Boolean, changelogTrimmed: Boolean)

/**
 * Takes snapshots of a durable State, one partition at a time while updates keep flowing (each
 * partition is encoded at a commit boundary, holding only that partition's turn), and applies the
 * retention policy: once every partition has `retained` snapshots, the newest `retained` are kept;
 * older snapshots, and the changelog updates of commits the oldest kept snapshot already holds, are
 * removed with Delta deletes (a new table version: older versions still read them until Delta's
 * VACUUM removes the files). So there are always `retained` points to recover from.
 */
final class Snapshotter(spark: SparkSession, state: SnapshotSource, log: DeltaChangelog,
    snapshots: SnapshotTable, retained: Int) extends Logging {
  require(retained >= 1, s"at least one snapshot per partition must be retained, got $retained")

  def round(): SnapshotRound = synchronized {
    state.checkHealthy()
    var written = 0
    (0 until state.partitionCount).foreach { p =>
      val e = state.encode(p)
      if (!snapshots.ids(p).headOption.contains(e.journalSeq)) { snapshots.write(p, e.journalSeq, e.updateProgress, e.changelogVersion, e.bytes); written += 1 }
    }
    val (removed, trimmed) = retain()
    SnapshotRound(written, state.partitionCount - written, removed, trimmed)
  }

  // The oldest kept snapshot of every partition bounds what the changelog must still hold.
  private def retain(): (Boolean, Boolean) = {
    val keepFrom = (0 until state.partitionCount).flatMap { p =>
      val ids = snapshots.ids(p)
      if (ids.size >= retained) Some(p -> ids(retained - 1)) else None
    }.toMap
    if (keepFrom.size < state.partitionCount) (false, false)
    else {
      val snapshotCondition = keepFrom.map { case (p, id) => s"(partition = $p AND snapshot_id < $id)" }.mkString(" OR ")
      DeltaTable.forPath(spark, snapshots.path).delete(snapshotCondition)
      val commits = log.readPartition(JournalPartition).filter(_.event == Events.Commit)
      val perPartition = keepFrom.toSeq.flatMap { case (p, id) =>
        val covered = commits.filter(_.commitSeq.longValue <= id).groupBy(_.writer).map { case (w, cs) => w -> cs.map(_.epoch).max }
        if (covered.isEmpty) None
        else Some(s"(partition = $p AND (" +
          covered.map { case (w, e) => s"(writer = ${quote(w)} AND epoch <= $e)" }.mkString(" OR ") + "))")
      }
      if (perPartition.nonEmpty) {
        // Between commits: the State's own Kernel commits of new epochs never race this delete.
        state.betweenCommits(DeltaTable.forPath(spark, log.path).delete(perPartition.mkString(" OR ")))
      }
      (true, perPartition.nonEmpty)
    }
  }

  private def quote(s: String): String = "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"
}
