package io.sharedstate.spark.durable

import io.sharedstate.core.SharedStateException

/**
 * The checks that keep a durable State from reopening with less than it had: a State whose metadata
 * exists was created with all its tables, so a missing table, a changelog without the journal its
 * history and snapshots need, or a partition whose snapshots retention relied on (it trimmed the
 * changelog past them) are gone, is an error naming what is missing. Nothing is re-created over it:
 * an empty table in its place would reopen the State empty (silent loss).
 */
private[sharedstate] object StateIntegrity {

  /** What each table of a State holds, for the errors. */
  val Holds: Map[String, String] = Map(
    "changelog" -> "every update and the journal of progress events the State is rebuilt from",
    "snapshots" -> "the partition snapshots recovery starts from (retention trimmed the changelog behind them)",
    "rejected" -> "every update the State rejected (its history before the latest snapshots is in no other table)"
  )

  /** A table of a State whose metadata exists is not there (deleted directory, or its `_delta_log` gone). */
  def missing(state: String, table: String, path: String): SharedStateException = new SharedStateException(
    s"State '$state': its $table table at $path is missing: it should hold ${Holds(table)}. The State's metadata " +
      "exists, so the table was created and has since been deleted; the State is not opened and nothing is " +
      s"re-created over it (it would reopen with less than it had). Restore $path (from a backup or a copy), " +
      "or delete the whole State directory to start it over.")

  /** The changelog had files added but holds no journal rows: its rows were deleted. */
  def emptied(state: String, path: String, version: Long): SharedStateException = new SharedStateException(
    s"State '$state': its changelog table at $path had files committed but holds no journal rows at Delta version " +
      s"$version: it " +
      s"should hold ${Holds("changelog")}, and its rows were deleted. The State is not opened (it would reopen " +
      s"empty); restore the table (e.g. Delta RESTORE to an earlier version of $path).")

  /** The snapshots hold journal events the changelog no longer has (it was replaced or emptied). */
  def journalBehindSnapshots(state: String, path: String, snapshotId: Long, lastEvent: Long): SharedStateException =
    new SharedStateException(
      s"State '$state': its snapshots hold journal event $snapshotId but its changelog table at $path ends at " +
        s"event $lastEvent: the changelog was replaced or emptied after the snapshots were taken. It should hold " +
        s"${Holds("changelog")}; the State is not opened. Restore $path (e.g. Delta RESTORE, or a backup).")

  /**
   * Partition `partition` has no restore point holding the journal events retention trimmed from the
   * changelog (through `trimmedThrough`): its snapshots were deleted, and its updates are in no table.
   */
  def snapshotsTrimmedPast(state: String, snapshotsPath: String, changelogPath: String, partition: Int,
      trimmedThrough: Long, newest: Option[Long]): SharedStateException = new SharedStateException(
    s"State '$state': retention trimmed the changelog at $changelogPath of partition $partition's updates through " +
      s"journal event $trimmedThrough, relying on its snapshots, but the snapshots table at $snapshotsPath " +
      newest.fold(s"has no complete snapshot of partition $partition")(id =>
        s"only has snapshots of partition $partition up to event $id") +
      s" (it should hold ${Holds("snapshots")}). Those updates are in no table: the State is not opened. Restore " +
      s"$snapshotsPath (e.g. Delta RESTORE to an earlier version, or a backup).")
}
