package io.sharedstate.spark.durable

import ChangelogSchema.{Events, JournalPartition}
import org.apache.spark.internal.Logging

/**
 * What one snapshot round did: `written` snapshots (`deltas` of them delta snapshots), `unchanged`
 * partitions skipped (no journal event since their newest snapshot), `entries`/`bytes`: the entries
 * and encoded bytes the written snapshots hold (before Parquet's compression); `snapshotMs`: the wall
 * time of capturing, encoding and writing them (partitions in parallel), `retentionMs`: the retention
 * deletes after. Summed over the partitions (so they may add up to more than `snapshotMs`):
 * `lockWaitMs` waiting for the commit lock, `captureMs` capturing under it (writers wait for it),
 * `encodeMs` encoding, `writeMs` writing the Parquet files and committing them. `trimLockMs`: the
 * changelog trim's commit, between commits (writers wait for it too).
 * `trigger`: what started it (`request`: State.snapshot(); `interval`: the periodic round; `updates`:
 * a partition applied `spark.sharedstate.snapshot.afterUpdates` updates since its last snapshot;
 * `bulk load`: the same, at the end of a bulk load); `startedMillis`: when (epoch milliseconds).
 */
final case class SnapshotRound(written: Int, unchanged: Int, snapshotsRemoved: Boolean,
    changelogTrimmed: Boolean,
    deltas: Int = 0, entries: Long = 0L, bytes: Long = 0L, snapshotMs: Long = 0L, retentionMs: Long = 0L,
    lockWaitMs: Long = 0L, captureMs: Long = 0L, encodeMs: Long = 0L, writeMs: Long = 0L,
    trigger: String = SnapshotRound.Requested, startedMillis: Long = 0L, trimLockMs: Long = 0L)

object SnapshotRound {
  val Requested = "request"
  val Interval = "interval"
  val Updates = "updates"
  val BulkLoad = "bulk load"
}

/**
 * Takes snapshots of a durable State while updates keep flowing, and applies the retention policy.
 * Each partition is captured at a commit boundary (holding the commit lock only to take references
 * to its immutable value sets), then encoded and its Parquet files written outside the lock; the
 * partitions run in parallel on a small pool sized to the cores ([[Snapshotter.pool]]), each one's
 * files written as soon as it is encoded, and the round adds them all in one Kernel commit.
 *
 * Delta snapshots: when the State tracks changed keys (`state.tracksChanges`: a local owner, or cluster hosts) and the
 * table records chains, a partition's snapshot after a full one holds only the keys changed since
 * the partition's previous snapshot; a chain reaching `fullEvery` links (the full one included), or
 * whose deltas together outgrow its full snapshot, is followed by a full snapshot. `restored`: the
 * chain each partition was recovered from (its change tracking started there), else a full snapshot first.
 *
 * Retention: once every partition has `retained` restore points, the newest `retained` are kept with
 * the whole chain of the oldest of them; older snapshots, and the changelog files of commits the
 * oldest kept snapshot (that chain's full one) already holds, are removed, each table by one commit of
 * remove actions (a new table version that writes only the log: older versions still read the files
 * until Delta's VACUUM deletes them). So there are always at least `retained` points to recover from,
 * and every kept snapshot is one. The same changelog commit records per partition the journal event
 * it is trimmed through ([[DeltaChangelog.markTrimmed]]), which recovery checks its snapshots against.
 *
 * Rounds on change (`afterUpdates` > 0): a round is due once some partition has applied that many
 * updates since its last snapshot ([[roundIfDue]]), as a memtable is flushed once it holds so much;
 * the source's counts say (a source that cannot count, a cluster's, is never due).
 */
private[sharedstate] final class Snapshotter(state: SnapshotSource, log: DeltaChangelog,
    snapshots: SnapshotTable, retained: Int, fullEvery: Int = 1, restored: Map[Int, SnapshotChain] = Map.empty,
    afterUpdates: Long = 0L)
    extends Logging {
  require(retained >= 1, s"at least one snapshot per partition must be retained, got $retained")
  require(fullEvery >= 1, s"a snapshot chain has at least its full snapshot, got fullEvery = $fullEvery")
  require(afterUpdates >= 0, s"afterUpdates must be >= 0, got $afterUpdates")

  // Per partition, its count of applied updates when its newest snapshot was taken (what a recovery
  // replayed counts as held: a round on change starts only after new updates).
  private val appliedAt: Array[Long] = Array.tabulate(state.partitionCount)(state.updatesApplied)
  // The newest rounds, oldest first (what State.snapshot_rounds() lists).
  private val recent = scala.collection.mutable.Queue.empty[SnapshotRound]

  /**
   * Whether some partition applied `afterUpdates` updates since its last snapshot (never when 0), judged
   * again at a commit boundary when it looks so: a check made while a commit applies (a large load's)
   * waits for that commit's end, so the round it starts begins after the commit, with all of it, rather
   * than waiting inside the round for it.
   */
  def due: Boolean = afterUpdates > 0 && dueNow && state.betweenCommits(dueNow)

  private def dueNow: Boolean = (0 until state.partitionCount).exists { p =>
    val applied = state.updatesApplied(p)
    applied >= 0 && applied - appliedAt(p) >= afterUpdates
  }

  /**
   * A round, tagged `trigger`, if one is [[due]]. The background look ([[SnapshotRound.Updates]]) leaves
   * a round to a bulk load that is committing ([[loading]]): the load takes the round it made due itself.
   */
  def roundIfDue(trigger: String): Option[SnapshotRound] =
    if (trigger == SnapshotRound.Updates && loads.get > 0) None
    else synchronized(if (due) Some(round(trigger)) else None)

  // Bulk loads inside `loading`: from the start of their commit to the end of their own round.
  private val loads = new java.util.concurrent.atomic.AtomicInteger()

  /** Runs a bulk load's commit and its round (see [[roundIfDue]]). */
  def loading[T](body: => T): T = {
    loads.incrementAndGet()
    try body
    finally loads.decrementAndGet()
  }

  /** The newest rounds of this owner (at most [[Snapshotter.Recent]]), oldest first. */
  def recentRounds: Seq[SnapshotRound] = synchronized(recent.toList)

  // Per partition, the chain its change tracking is relative to (None: the next snapshot is full).
  private val chains: Array[Option[SnapshotChain]] = Array.tabulate(state.partitionCount)(restored.get)
  // The bounds the last changelog trim used: while a chain grows they stay, and the delete is not repeated.
  private var trimmedAt: Map[Int, Long] = Map.empty

  /** Test hook: runs after a changelog trim found its files, before its commit (outside every lock). */
  @volatile private[durable] var beforeTrim: () => Unit = () => ()

  /** Test hook: runs after partition `p` is encoded, before its files are written (outside every lock). */
  @volatile private[durable] var beforeWrite: Int => Unit = _ => ()

  def round(trigger: String = SnapshotRound.Requested): SnapshotRound = synchronized {
    state.checkHealthy()
    val startedMillis = System.currentTimeMillis()
    val started = System.nanoTime()
    val deltasAllowed = fullEvery > 1 && state.tracksChanges && snapshots.recordsChains
    val known = stored()
    val target = snapshots.target()
    val pending = (0 until state.partitionCount).map { p =>
      Snapshotter.pool.submit(new java.util.concurrent.Callable[Option[Taken]] {
        override def call(): Option[Taken] = snapshotPartition(p, deltasAllowed, known(p).headOption.map(_.id), target)
      })
    }
    // Every partition's outcome before the first failure is raised: the others' snapshots are stored.
    val outcomes = pending.map(f => scala.util.Try(f.get()))
    val taken = outcomes.collect { case scala.util.Success(Some(t)) => t }
    // One Kernel commit for the round's snapshots (a commit replays the table's log: one, not one per partition).
    val committing = System.nanoTime()
    if (taken.nonEmpty) {
      try snapshots.commit(taken.map(_.files))
      catch { case err: Throwable => taken.foreach(_.e.unstored()); throw err }
      taken.foreach { t =>
        if (t.applied >= 0) appliedAt(t.p) = t.applied
        val size = t.e.size
        chains(t.p) = Some(t.chain.fold(SnapshotChain.started(t.e.journalSeq, size))(_.extended(t.e.journalSeq, size)))
        known(t.p) = SnapshotLink(t.e.journalSeq, t.e.updateProgress, t.chain.map(_.baseId), t.chain.map(_.tipId)) +:
          known(t.p)
        // Stored whatever the source makes of it: a source that misses it takes its next snapshot in full.
        try t.e.stored()
        catch {
          case scala.util.control.NonFatal(err) => logWarning(s"partition ${t.p}: snapshot stored, not noted", err)
        }
      }
    }
    val commitNanos = System.nanoTime() - committing
    outcomes.collectFirst { case scala.util.Failure(e) => throw unwrapped(e) }
    val retaining = System.nanoTime()
    val (removed, trimmed, trimLockNanos) = retain()
    def ms(nanos: Seq[Long]) = nanos.sum / 1000000L
    val done = SnapshotRound(
      taken.size,
      state.partitionCount - taken.size,
      removed,
      trimmed,
      taken.count(_.e.delta),
      taken.map(t => math.max(0, t.e.entries).toLong).sum,
      taken.map(_.e.size).sum,
      (retaining - started) / 1000000L,
      (System.nanoTime() - retaining) / 1000000L,
      lockWaitMs = ms(taken.map(_.e.lockWaitNanos)),
      captureMs = ms(taken.map(_.e.captureNanos)),
      encodeMs = ms(taken.map(_.e.encodeNanos)),
      writeMs = ms(taken.map(_.writeNanos) :+ commitNanos),
      trigger = trigger,
      startedMillis = startedMillis,
      trimLockMs = trimLockNanos / 1000000L
    )
    recent.enqueue(done)
    while (recent.size > Snapshotter.Recent) recent.dequeue()
    done
  }

  // One partition's snapshot: captured, encoded and its files written (the round commits them); None
  // when nothing changed since `newest`, the partition's newest stored snapshot.
  private def snapshotPartition(p: Int, deltasAllowed: Boolean, newest: Option[Long],
      target: SnapshotTarget): Option[Taken] = {
    // A delta only on the chain the partition's tracking is relative to, and only if it is still the newest.
    val chain = chains(p).filter(c => deltasAllowed && newest.contains(c.tipId) && c.takesDelta(fullEvery))
    // Read before the pass: updates applied during it may be after its boundary (the next round's).
    val applied = state.updatesApplied(p)
    val e = state.encode(p, delta = chain.nonEmpty, parent = chain.fold(-1L)(_.tipId))
    if (newest.contains(e.journalSeq)) { // no journal event since: nothing to store
      e.unstored()
      if (applied >= 0) appliedAt(p) = applied
      None
    } else {
      // A source may answer a delta request with a full snapshot (a cluster host without the chain's keys).
      val link = chain.filter(_ => e.delta)
      val writing = System.nanoTime()
      val files =
        try {
          beforeWrite(p)
          snapshots.writeFiles(target, p, e.journalSeq, e.updateProgress, e.changelogVersion, e.blocks,
            link.map(c => (c.baseId, c.tipId)))
        } catch { case err: Throwable => e.unstored(); throw err }
      Some(Taken(p, e, link, files, System.nanoTime() - writing, applied))
    }
  }

  // The restore points of every partition, newest first: read from the table on the first round (one
  // scan), then kept here as rounds add snapshots and retention removes them (this owner is the only writer).
  private var storedLinks: Array[Seq[SnapshotLink]] = _
  private def stored(): Array[Seq[SnapshotLink]] = {
    if (storedLinks == null) {
      val all = snapshots.allLinks()
      storedLinks = Array.tabulate(state.partitionCount)(p => all.getOrElse(p, Nil))
    }
    storedLinks
  }

  private def unwrapped(e: Throwable): Throwable = e match {
    case x: java.util.concurrent.ExecutionException if x.getCause != null => x.getCause
    case other => other
  }

  // The oldest kept snapshot of every partition (the full one of its oldest kept restore point's
  // chain) bounds what the changelog must still hold.
  private def retain(): (Boolean, Boolean, Long) = {
    val known = stored()
    val keepFrom = (0 until state.partitionCount).flatMap { p =>
      val links = known(p)
      if (links.size >= retained) Some(p -> links(retained - 1).base) else None
    }.toMap
    if (keepFrom.size < state.partitionCount || keepFrom == trimmedAt) (false, false, 0L)
    else {
      val older = snapshots.removeOlderThan(keepFrom)
      val removable = older.count > 0
      if (removable) {
        logInfo(s"snapshots ${snapshots.path}: removed ${older.count} files (${older.bytes} bytes) of older snapshots")
        keepFrom.foreach { case (p, id) => known(p) = known(p).filter(_.id >= id) }
      }
      // An applied round's pairs are trimmed like an epoch's updates (its event's writer and epoch are theirs).
      val commits =
        log.readPartition(JournalPartition).filter(e => e.event == Events.Commit || e.event == Events.GroupAdvance)
      // Per partition: the journal event it is trimmed through, and each writer's last epoch up to it.
      val perPartition = keepFrom.toSeq.flatMap { case (p, id) =>
        val covered = commits.filter(_.commitSeq.longValue <= id).groupBy(_.writer).map { case (w, cs) =>
          w -> cs.map(_.epoch).max
        }
        Option.when(covered.nonEmpty)(p -> (id, covered))
      }.toMap
      val lockNanos = if (perPartition.isEmpty) 0L
      else {
        // The files to remove are found outside every lock (from their footers, else their writer and
        // epoch columns); then one commit of the log only, between commits: the State's own Kernel
        // commits of new epochs never race it, and writers wait for it only as long as that commit takes.
        val files = log.coveredFiles(perPartition.map { case (p, (_, covered)) => p -> covered })
        beforeTrim()
        val nanos = state.betweenCommits {
          val locked = System.nanoTime()
          log.markTrimmed(perPartition.map { case (p, (id, _)) => p -> id }, files)
          System.nanoTime() - locked
        }
        logInfo(s"changelog ${log.path}: trimmed ${files.count} files (${files.bytes} bytes) of " +
          s"${perPartition.size} partitions")
        nanos
      }
      trimmedAt = keepFrom
      (removable, perPartition.nonEmpty, lockNanos)
    }
  }

}

private[sharedstate] object Snapshotter {

  /** Rounds kept in [[Snapshotter.recentRounds]]. */
  val Recent = 32

  /**
   * Where rounds capture, encode and write their partitions: one thread per core (at least 2, so a
   * partition's Kernel write overlaps the next one's encoding), shared by every State's rounds, daemon
   * threads so an application that forgets to close its States still exits.
   */
  private[durable] val pool: java.util.concurrent.ExecutorService = {
    val threads = math.max(2, Runtime.getRuntime.availableProcessors())
    val counter = new java.util.concurrent.atomic.AtomicInteger()
    java.util.concurrent.Executors.newFixedThreadPool(threads,
      (r: Runnable) => {
        val t = new Thread(r, s"sharedstate-snapshot-${counter.incrementAndGet()}")
        t.setDaemon(true)
        t
      })
  }
}

// A partition's snapshot in a round: its files (not yet committed), the chain it extends (None: a
// full snapshot), how long writing its files took and the partition's applied count before its pass.
private final case class Taken(p: Int, e: EncodedPartition, chain: Option[SnapshotChain], files: SnapshotFiles,
    writeNanos: Long, applied: Long)
