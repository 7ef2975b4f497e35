package io.sharedstate.spark.durable

import io.delta.tables.DeltaTable
import ChangelogSchema.{Events, JournalPartition}
import org.apache.spark.internal.Logging
import org.apache.spark.sql.SparkSession

/**
 * What one snapshot round did: `written` snapshots (`deltas` of them delta snapshots), `unchanged`
 * partitions skipped (no journal event since their newest snapshot), `entries`/`bytes`: the entries
 * and encoded bytes the written snapshots hold; `snapshotMs`: capturing, encoding and writing them,
 * `retentionMs`: the retention deletes after.
 */
final case class SnapshotRound(written: Int, unchanged: Int, snapshotsRemoved: Boolean,
    changelogTrimmed: Boolean,
    deltas: Int = 0, entries: Long = 0L, bytes: Long = 0L, snapshotMs: Long = 0L, retentionMs: Long = 0L)

/**
 * Takes snapshots of a durable State, one partition at a time while updates keep flowing (each
 * partition is captured at a commit boundary, holding only that partition's turn, and encoded after
 * it), and applies the retention policy.
 *
 * Delta snapshots: when the State tracks changed keys (`state.tracksChanges`, a local owner) and the
 * table records chains, a partition's snapshot after a full one holds only the keys changed since
 * the partition's previous snapshot; a chain reaching `fullEvery` links (the full one included), or
 * whose deltas together outgrow its full snapshot, is followed by a full snapshot. `restored`: the
 * chain each partition was recovered from (its change tracking started there), else a full snapshot first.
 *
 * Retention: once every partition has `retained` restore points, the newest `retained` are kept with
 * the whole chain of the oldest of them; older snapshots, and the changelog updates of commits the
 * oldest kept snapshot (that chain's full one) already holds, are removed with Delta deletes (a new
 * table version: older versions still read them until Delta's VACUUM removes the files). So there
 * are always at least `retained` points to recover from, and every kept snapshot is one. Before the
 * changelog delete, the changelog records per partition the journal event it is trimmed through
 * ([[DeltaChangelog.markTrimmed]]), which recovery checks its snapshots against.
 */
private[sharedstate] final class Snapshotter(spark: SparkSession, state: SnapshotSource, log: DeltaChangelog,
    snapshots: SnapshotTable, retained: Int, fullEvery: Int = 1, restored: Map[Int, SnapshotChain] = Map.empty)
    extends Logging {
  require(retained >= 1, s"at least one snapshot per partition must be retained, got $retained")
  require(fullEvery >= 1, s"a snapshot chain has at least its full snapshot, got fullEvery = $fullEvery")

  // Per partition, the chain its change tracking is relative to (None: the next snapshot is full).
  private val chains: Array[Option[SnapshotChain]] = Array.tabulate(state.partitionCount)(restored.get)
  // The bounds the last changelog trim used: while a chain grows they stay, and the delete is not repeated.
  private var trimmedAt: Map[Int, Long] = Map.empty

  def round(): SnapshotRound = synchronized {
    state.checkHealthy()
    val started = System.nanoTime()
    val deltasAllowed = fullEvery > 1 && state.tracksChanges && snapshots.recordsChains
    var written, deltas = 0
    var entries, bytes = 0L
    (0 until state.partitionCount).foreach { p =>
      val newest = snapshots.ids(p).headOption
      // A delta only on the chain the partition's tracking is relative to, and only if it is still the newest.
      val chain = chains(p).filter(c => deltasAllowed && newest.contains(c.tipId) && c.takesDelta(fullEvery))
      val e = state.encode(p, delta = chain.nonEmpty)
      if (newest.contains(e.journalSeq)) e.unstored() // no journal event since: nothing to store
      else {
        try snapshots.write(p, e.journalSeq, e.updateProgress, e.changelogVersion, e.bytes,
            chain.map(c => (c.baseId, c.tipId)))
        catch { case err: Throwable => e.unstored(); throw err }
        chains(p) = Some(chain.fold(SnapshotChain.started(e.journalSeq, e.bytes.length.toLong))(_.extended(e.journalSeq,
              e.bytes.length.toLong)))
        written += 1
        if (e.delta) deltas += 1
        entries += math.max(0, e.entries)
        bytes += e.bytes.length
      }
    }
    val retaining = System.nanoTime()
    val (removed, trimmed) = retain()
    SnapshotRound(written, state.partitionCount - written, removed, trimmed, deltas, entries, bytes,
      (retaining - started) / 1000000L, (System.nanoTime() - retaining) / 1000000L)
  }

  // The oldest kept snapshot of every partition (the full one of its oldest kept restore point's
  // chain) bounds what the changelog must still hold.
  private def retain(): (Boolean, Boolean) = {
    val keepFrom = (0 until state.partitionCount).flatMap { p =>
      val links = snapshots.links(p)
      if (links.size >= retained) Some(p -> links(retained - 1).base) else None
    }.toMap
    if (keepFrom.size < state.partitionCount || keepFrom == trimmedAt) (false, false)
    else {
      val removable = keepFrom.exists { case (p, id) => snapshots.hasOlderThan(p, id) }
      if (removable) {
        val snapshotCondition =
          keepFrom.map { case (p, id) => s"(partition = $p AND snapshot_id < $id)" }.mkString(" OR ")
        DeltaTable.forPath(spark, snapshots.path).delete(snapshotCondition)
      }
      val commits = log.readPartition(JournalPartition).filter(_.event == Events.Commit)
      val perPartition = keepFrom.toSeq.flatMap { case (p, id) =>
        val covered = commits.filter(_.commitSeq.longValue <= id).groupBy(_.writer).map { case (w, cs) =>
          w -> cs.map(_.epoch).max
        }
        if (covered.isEmpty) None
        else Some(p -> id -> (s"(partition = $p AND (" +
          covered.map { case (w, e) => s"(writer = ${quote(w)} AND epoch <= $e)" }.mkString(" OR ") + "))"))
      }
      if (perPartition.nonEmpty) {
        // Between commits: the State's own Kernel commits of new epochs never race these commits. The
        // trim is recorded first, so a changelog missing those updates always says which snapshots it needs.
        state.betweenCommits {
          log.markTrimmed(perPartition.map(_._1).toMap)
          DeltaTable.forPath(spark, log.path).delete(perPartition.map(_._2).mkString(" OR "))
        }
      }
      trimmedAt = keepFrom
      (removable, perPartition.nonEmpty)
    }
  }

  private def quote(s: String): String = "'" + s.replace("\\", "\\\\").replace("'", "\\'") + "'"
}
