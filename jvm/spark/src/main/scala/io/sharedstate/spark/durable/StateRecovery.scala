package io.sharedstate.spark.durable

import io.sharedstate.core.{EventTime, GroupAdvance, RejectedUpdate, State, StateReplay, UpdateBatch}
import io.sharedstate.core.codec.SnapshotRestore
import ChangelogSchema.{AppliedWriter, Events, JournalPartition}
import java.util.concurrent.{Callable, Executors}
import java.util.concurrent.atomic.AtomicInteger

/**
 * Where a recovery (or a follower's catch-up) left the State: the next journal event and the table
 * version read; `rejections`: what the replayed events rejected, each with its event (a cluster host
 * hands its share to the driver, which keeps the rejected table); `dataFilesRead`: how many changelog
 * files of the State's partitions it read.
 */
private[sharedstate] final case class Recovered(nextSeq: Long, version: Long,
    rejections: Seq[(Long, RejectedUpdate)] = Nil, dataFilesRead: Int = 0,
    chains: Map[Int, SnapshotChain] = Map.empty)

/**
 * Rebuilds a State from its tables: each partition from its latest restore point (or the one `pick`
 * chooses: a chain, its full snapshot then its deltas in order), then the journal's
 * events are replayed in order (see [[StateReplay]]), each commit with those of its epoch's updates
 * that the partition's snapshot does not hold yet, in the order its tasks sent them. Partitions
 * (snapshots and changelog) are read and decoded in parallel, all at one changelog version. A
 * partition's changelog is read only from the files added after its snapshot's changelog version
 * (the files up to it hold only commits the snapshot has; for a chain, its newest link's version), so recovery reads the tail, not the
 * history a snapshot covers; the journal partition (one row per event) is read whole. The
 * rejections of the replayed events that the rejected table does not hold yet (the application
 * stopped between an epoch's changelog commit and its rejected-table commit) are written to it.
 */
private[sharedstate] object StateRecovery {

  /**
   * @param rebuilds the State partitions to rebuild (a cluster host rebuilds its own; the others stay
   *                 empty, and the journal's events still replay the whole progress). Rows of no
   *                 partition (a null key) belong to the host of their task's partition, as when staged.
   *                 A partial rebuild sees only its partitions' rejections: pass `rejected` = None then
   *                 (the driver, which replays the whole journal, keeps the rejected table).
   * @param trackChanges the State's partitions track their changed keys from the loaded snapshots on
   *                 (before the changelog after them replays), so the owner's next snapshots can be
   *                 deltas on those chains (`Recovered.chains`).
   */
  def replay(state: State, log: DeltaChangelog, snapshots: Option[SnapshotTable], rejected: Option[RejectedTable],
      threads: Int = 4, pick: (SnapshotTable, Int) => Seq[StoredSnapshot] = (t, p) => t.latestChain(p),
      rebuilds: Int => Boolean = _ => true, trackChanges: Boolean = false, readsOwnersTables: Boolean = false,
      afterSnapshotsRead: () => Unit = () => ()): Recovered = {
    val n = state.partitionCount
    val partitions = JournalPartition +: (0 until n).filter(rebuilds)
    val pool = Executors.newFixedThreadPool(math.max(1, math.min(threads, partitions.size)))
    val filesRead = new AtomicInteger()
    val (rows, restored, version) =
      try {
        // Per partition: its chain read and loaded into the State as it is decoded (the partitions in
        // parallel: the State is not in use yet), then its newest link's id, changelog version and summary.
        def readChain(p: Int): Option[(Long, Option[Long], SnapshotChain)] =
          if (!rebuilds(p)) None
          else snapshots.map(pick(_, p)).filter(_.nonEmpty).map { chain =>
            SnapshotRestore.loadChain(state, chain.map(_.bytes))
            (chain.last.id, chain.last.changelogVersion, SnapshotChain.of(chain).get)
          }
        val snapshotReads = (0 until n).map(p => pool.submit(() => readChain(p)))
        val restored = snapshotReads.map(_.get())
        afterSnapshotsRead()
        // The changelog version is fixed after the snapshots are read: a snapshot is written after the
        // journal events it holds, so this version has every one of them (while its owner writes on).
        val latest = log.latestVersion
        val version = if (!readsOwnersTables) latest
        else consistentVersion(log, snapshots, latest, restored.map(_.fold(-1L)(_._1)), rebuilds)
        val coveredUpTo = restored.map(_.flatMap(_._2))
        val added = coveredUpTo.flatten.minOption.flatMap(v => log.filesAddedAfter(v, version))
        def readFile(p: Int): String => Boolean = (if (p == JournalPartition) None else coveredUpTo(p), added) match {
          case (Some(covered), Some(addedAt)) => path =>
              val read = addedAt.get(DeltaChangelog.fileName(path)).exists(_ > covered)
              if (read) filesRead.incrementAndGet()
              read
          case _ => _ => { if (p != JournalPartition) filesRead.incrementAndGet(); true }
        }
        val rowReads = partitions.map(p =>
          pool.submit((() => log.readPartition(p, Some(version), readFile(p))): Callable[IndexedSeq[ChangelogRow]]))
        (rowReads.flatMap(_.get()).filter(r =>
            r.isEvent || r.partition != JournalPartition || rebuilds(math.floorMod(r.task, n))),
          restored, version)
      } finally pool.shutdown()
    // Per partition, the last journal event its snapshot holds (-1: no snapshot, replay everything).
    val holdsUpTo = restored.map(_.fold(-1L)(_._1))
    checkComplete(state.name, log, snapshots, version, rows, holdsUpTo, rebuilds)
    if (trackChanges) state.trackChanges()
    val replayed = replayEvents(state, rows, after = -1L, holdsUpTo, log.path)
    rejected.foreach { table =>
      val last = table.lastEvent
      val missing = replayed.rejections.filter(_._1 > last)
      if (missing.nonEmpty) table.append(missing, Some(missing.map(_._1).max))
      // A partition's snapshot holds its updates up to its last event, so the replay skips them and
      // never rejects them again: the table's rejections the replay did not make are counted and logged
      // as the State had them before the restart (its metrics and rejected log match the table).
      state.restoreRejected(notReplayed(table.readWithEvents().filter(_._1 <= last), replayed.rejections))
    }
    Recovered(replayed.lastSeq + 1, version, replayed.rejections, filesRead.get,
      restored.zipWithIndex.collect { case (Some((_, _, chain)), p) => p -> chain }.toMap)
  }

  /**
   * The changelog version a reader of another application's tables replays (`readsOwnersTables`):
   * `latest`, unless the owner took snapshot rounds between this read of the snapshots and of the
   * changelog, and its retention trimmed the changelog past the snapshots read. The snapshots table then
   * has newer restore points holding what was trimmed, and the answer is the newest version before
   * that trim ([[DeltaChangelog.newestNotTrimmedPast]]), so the State is rebuilt as of it (a follower
   * goes on from there). Tables without such newer snapshots are not walked back, nor is an owner's own
   * recovery ever: [[checkComplete]] fails naming them.
   */
  private def consistentVersion(log: DeltaChangelog, snapshots: Option[SnapshotTable], latest: Long,
      holdsUpTo: IndexedSeq[Long], rebuilds: Int => Boolean): Long = {
    val bound = (p: Int) => if (p < holdsUpTo.size && rebuilds(p)) holdsUpTo(p) else Long.MaxValue
    val past = log.trimmedThrough(Some(latest)).filter { case (p, through) => through > bound(p) }
    lazy val newer = snapshots.fold(Map.empty[Int, Seq[SnapshotLink]])(_.allLinks())
    if (past.isEmpty || !past.forall { case (p, through) => newer.get(p).exists(_.exists(_.id >= through)) }) latest
    else log.newestNotTrimmedPast(bound, 0L, latest).getOrElse(latest)
  }

  // The tables hold everything the rebuild needs (see StateIntegrity): a changelog that had files has
  // journal rows, and reaches the events the snapshots hold; a partition whose updates retention
  // trimmed starts from a snapshot holding them. Checked before anything is replayed.
  private def checkComplete(name: String, log: DeltaChangelog, snapshots: Option[SnapshotTable], version: Long,
      rows: Seq[ChangelogRow], holdsUpTo: IndexedSeq[Long], rebuilds: Int => Boolean): Unit = {
    val lastEvent = rows.iterator.filter(_.isEvent).map(_.commitSeq.longValue).maxOption
    // No journal row although a commit once added files (not only the owners' takeover commits).
    if (lastEvent.isEmpty && log.filesAddedAfter(0L, version).exists(_.nonEmpty))
      throw StateIntegrity.emptied(name, log.path, version)
    holdsUpTo.maxOption.filter(_ > lastEvent.getOrElse(-1L)).foreach { id =>
      throw StateIntegrity.journalBehindSnapshots(name, log.path, id, lastEvent.getOrElse(-1L))
    }
    log.trimmedThrough(Some(version)).foreach { case (p, through) =>
      if (p < holdsUpTo.size && rebuilds(p) && holdsUpTo(p) < through) {
        throw StateIntegrity.snapshotsTrimmedPast(name, snapshots.fold("(not read)")(_.path), log.path, p, through,
          Option.when(holdsUpTo(p) >= 0)(holdsUpTo(p)))
      }
    }
  }

  // The rejections of `held` (the table's, with their events) that `replayed` does not hold, each
  // matched once by event, writer, epoch, reason, key and time; in the table's order.
  private def notReplayed(held: Seq[(Long, RejectedUpdate)],
      replayed: Seq[(Long, RejectedUpdate)]): Seq[RejectedUpdate] = {
    def id(e: Long, r: RejectedUpdate) =
      (e, r.writer, r.epoch, r.reason, Option(r.key).map(java.nio.ByteBuffer.wrap), Option(r.time))
    val counts = scala.collection.mutable.HashMap.empty[Any, Int]
    replayed.foreach { case (e, r) => counts(id(e, r)) = counts.getOrElse(id(e, r), 0) + 1 }
    held.flatMap { case (e, r) =>
      val k = id(e, r)
      counts.get(k) match {
        case Some(n) if n > 0 => counts(k) = n - 1; None
        case _ => Some(r)
      }
    }
  }

  /** What a replay did: the last journal event replayed (or `after`) and each rejection with its event. */
  final case class Replayed(lastSeq: Long, rejections: Seq[(Long, RejectedUpdate)])

  /**
   * Replays the journal events among `rows` after event `after`, each commit with its epoch's updates
   * among `rows` that partition p's snapshot does not hold (its commit is above `holdsUpTo(p)`).
   */
  def replayEvents(
      state: State, rows: Seq[ChangelogRow], after: Long, holdsUpTo: Int => Long, path: String): Replayed = {
    val (allEvents, allUpdates) = rows.partition(_.isEvent)
    val events = allEvents.filter(_.commitSeq.longValue > after)
    // An applied round's pairs are keyed like an epoch's updates: its event's writer (AppliedWriter) and
    // epoch (the event's commit_seq).
    val commitSeq = events.filter(e => e.event == Events.Commit || e.event == Events.GroupAdvance)
      .map(e => (e.writer, e.epoch) -> e.commitSeq.longValue).toMap
    val (pairs, updates) = allUpdates.filter { r =>
      commitSeq.get((r.writer, r.epoch)).exists(s => r.partition == JournalPartition || s > holdsUpTo(r.partition))
    }.partition(_.writer == AppliedWriter)
    // commit_seq -> the pairs its round put, in the round's order
    val rounds = pairs.groupBy(_.epoch).map { case (at, rs) =>
      at -> rs.sortBy(_.seq).map(r => GroupAdvance.Pair(r.key, r.timestamp.longValue, r.value)).toIndexedSeq
    }
    // (writer, epoch) -> task -> updates in the order the task sent them
    val epochs = updates.groupBy(r => (r.writer, r.epoch)).map { case (id, rs) =>
      id -> rs.groupBy(_.task).toSeq.sortBy(_._1).map { case (_, taskRows) => toBatch(taskRows.sortBy(_.seq)) }
    }
    val replay = new StateReplay(state)
    val rejections = events.sortBy(_.commitSeq.longValue).flatMap { e =>
      val rejected = e.event match {
        case Events.Register => replay.registered(e.writer, e.writerProgress.longValue)
        case Events.Commit =>
          replay.committed(e.writer, e.epoch, e.updateProgress.longValue, e.writerProgress.longValue, finish = false,
            epochs.getOrElse((e.writer, e.epoch), Nil))
        case Events.Finish => replay.finished(e.writer)
        case Events.Deregister => replay.deregistered(e.writer)
        case Events.GroupJoin => replay.groupJoined(e.updateProgress.longValue)
        case Events.GroupAdvance =>
          replay.groupAdvanced(GroupAdvance(e.updateProgress.longValue,
              rounds.getOrElse(e.commitSeq.longValue, IndexedSeq.empty)))
        case other => throw new IllegalStateException(s"Unknown event '$other' in the changelog at $path")
      }
      rejected.map(e.commitSeq.longValue -> _)
    }
    replay.finish()
    Replayed(events.map(_.commitSeq.longValue).foldLeft(after)(math.max), rejections)
  }

  /**
   * The updates one epoch of a writer sent to `partitions` (null-key rows by their task's partition),
   * per task in the order sent: what a host that took over partitions mid-epoch stages again.
   */
  def epochTasks(log: DeltaChangelog, partitionCount: Int, partitions: Seq[Int], writer: String,
      epoch: Long): Seq[(Int, UpdateBatch)] = {
    val owned = partitions.toSet
    (JournalPartition +: partitions).flatMap(log.readPartition(_))
      .filter(r =>
        !r.isEvent && r.writer == writer && r.epoch == epoch &&
          (r.partition != JournalPartition || owned(math.floorMod(r.task, partitionCount))))
      .groupBy(_.task).toSeq.sortBy(_._1).map { case (task, rows) => task -> toBatch(rows.sortBy(_.seq)) }
  }

  private def toBatch(rows: Seq[ChangelogRow]): UpdateBatch = {
    val b = new UpdateBatch
    rows.foreach { r =>
      if (r.key == null) b.reject(RejectedUpdate(null, r.timestamp, r.value, RejectedUpdate.NullKey, r.writer, r.epoch,
          EventTime.MinusInfinity))
      else if (r.timestamp == null) b.reject(RejectedUpdate(r.key, null, r.value, RejectedUpdate.NullTime, r.writer,
          r.epoch, EventTime.MinusInfinity))
      else b.add(r.key, r.timestamp.longValue, r.value)
    }
    b
  }
}
