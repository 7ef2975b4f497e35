package io.sharedstate.spark.durable

import io.sharedstate.core.{GroupAdvance, JournalCommit, Key, RejectedUpdate, SharedStateException, StateJournal}
import ChangelogSchema.{AppliedWriter, Events, JournalPartition}

/**
 * The journal of a durable State: every progress event becomes a row of the changelog's journal
 * partition, committed to Delta before the State makes the change visible (the State calls it under
 * its commit lock). An epoch's commit event goes into the same Delta transaction as the epoch's
 * data files, with SetTransaction (writer, epoch): the data and the U that decided its lateness are
 * durable together or not at all.
 *
 * @param nextSeq the order number of the next event (events are ordered across writers by it)
 * @param version the changelog version recovery read (it holds every event before `nextSeq`)
 * @param rejectedAtOpen the last event whose rejections the rejected table held when the State was opened
 */
private[sharedstate] final class DeltaJournal(state: String, log: DeltaChangelog, target: ChangelogTarget,
    rejectedTable: RejectedTable,
    nextSeq: Long, version: Long, lease: OwnerLease, rejectedAtOpen: Long = -1L)
    extends StateJournal {
  private var seq = nextSeq // only touched under the State's commit lock
  private var committedVersion = version // likewise
  @volatile private var rejectedThrough =
    rejectedAtOpen // the last event whose rejections went to the rejected table with its guard
  // A failed rejected-table commit: the State applied a step whose rejections are not durable, so it
  // takes no further step (nor snapshot) until it is reopened and recovery writes them.
  @volatile private var broken: Option[Throwable] = None

  /** The order number of the last event journaled (-1: none); read it under the State's commit lock. */
  def lastSeq: Long = seq - 1

  /** The last journal event whose rejections are in the rejected table (written in this application, or there at its opening). */
  def rejectedThroughEvent: Long = rejectedThrough

  /**
   * A changelog version that holds every event journaled so far and none to come (the version of
   * the last one, or the recovered version); read it under the State's commit lock, with `lastSeq`.
   */
  def lastVersion: Long = committedVersion

  override def writerRegistered(writer: String, frontier: Long): Unit = {
    checkHealthy()
    committedVersion = log.commitFiles(eventFile(Seq(event(Events.Register, writer, -1L, writerProgress = frontier))))
  }

  override def epochCommitting(c: JournalCommit): Unit = {
    checkHealthy()
    val files = c.payload match {
      case null => Nil
      case fs: Seq[_] => fs.map { case f: ChangelogFile => f; case other => unexpected(other) }
      case other => unexpected(other)
    }
    val events = Seq(event(Events.Commit, c.writer, c.epoch, updateProgress = c.updateProgress,
        writerProgress = c.writerProgress)) ++
      (if (c.finish) Seq(event(Events.Finish, c.writer, c.epoch)) else Nil)
    val committed = log.commitEpoch(c.writer, c.epoch, files ++ eventFile(events))
    committed.foreach(committedVersion = _)
    if (committed.isEmpty) {
      throw new SharedStateException(
        s"State '$state': epoch ${c.epoch} of writer '${c.writer}' is already in the changelog " +
          s"at ${log.path}, but this State had not applied it. Another application may be writing the same State root; " +
          "reopen the State (State.get) to recover what the changelog holds.")
    }
  }

  override def writerFinished(writer: String): Unit = {
    checkHealthy()
    committedVersion = log.commitFiles(eventFile(Seq(event(Events.Finish, writer, -1L))))
  }

  override def writerDeregistered(writer: String): Unit = {
    checkHealthy()
    committedVersion = log.commitFiles(eventFile(Seq(event(Events.Deregister, writer, -1L))))
  }

  override def groupJoined(group: String, updateProgress: Long): Unit = {
    checkHealthy()
    committedVersion =
      log.commitFiles(eventFile(Seq(event(Events.GroupJoin, group, -1L, updateProgress = updateProgress))))
  }

  // The pairs in their State partitions and the event in one Delta transaction. The step's pairs are
  // already in the State (U is not published yet): a failure leaves them undurable, so, as for the
  // rejected table, the State takes no further commit until it is reopened.
  override def groupAdvanced(advance: GroupAdvance): Unit = {
    checkHealthy()
    try {
      val at = seq
      val rows = advance.pairs.iterator.zipWithIndex.map { case (p, i) =>
        val partition = new Key(p.key).partition(target.partitionCount)
        ChangelogRow(partition, AppliedWriter, at, -1, i, p.key, java.lang.Long.valueOf(p.time), p.value)
      }.toIndexedSeq
      val files = rows.groupBy(_.partition).toSeq.sortBy(_._1).flatMap { case (p, rs) => target.write(p, rs) }
      val events =
        eventFile(Seq(event(Events.GroupAdvance, AppliedWriter, at, updateProgress = advance.updateProgress)))
      committedVersion = log.commitFiles(files ++ events)
    } catch { case e: Exception => broken = Some(e); throw e }
  }

  // The step's rejections, tagged with its last event; a step without an event of its own (none in a
  // durable State's normal life) is appended unguarded.
  override def updatesRejected(rejected: Seq[RejectedUpdate]): Unit = {
    val at = lastSeq
    val guard = if (at > rejectedThrough) Some(at) else None
    try rejectedTable.append(rejected.map(at -> _), guard)
    catch { case e: Exception => broken = Some(e); throw e }
    guard.foreach(rejectedThrough = _)
  }

  /**
   * Fails if this application lost the root's lease, holds it without margin (its renewal lapsed:
   * see [[OwnerLease.checkHeldWithMargin]]), or a rejected-table commit failed (see `broken`); checked
   * before every journal commit, and by the snapshotter. The changelog's own fence
   * ([[DeltaChangelog.takeOver]]) refuses a commit that gets past this after a takeover.
   */
  def checkHealthy(): Unit = {
    if (!lease.held) throw new SharedStateException(s"State '$state': this application no longer owns ${log.path} " +
      s"(its lease was taken over by ${lease.owner.map(_.describe).getOrElse("another application")}); it takes no " +
      "further commits. Stop it, or open the State read-only.")
    lease.checkHeldWithMargin(s"State '$state' (changelog ${log.path})")
    broken.foreach { e =>
      throw new SharedStateException(
        s"State '$state': writing its rejected updates to ${rejectedTable.path} or its transactions' pairs to " +
          s"${log.path} failed " +
          s"(${e.getMessage}); the State takes no further commits in this application. Reopen it (State.get) to recover " +
          "them from the changelog.",
        e
      )
    }
  }

  private def event(kind: String, writer: String, epoch: Long, updateProgress: java.lang.Long = null,
      writerProgress: java.lang.Long = null): ChangelogRow = {
    val row = ChangelogRow(
      JournalPartition,
      writer,
      epoch,
      task = -1,
      seq = 0,
      key = null,
      timestamp = null,
      value = null,
      event = kind,
      updateProgress = updateProgress,
      writerProgress = writerProgress,
      commitSeq = java.lang.Long.valueOf(seq)
    )
    seq += 1
    row
  }

  private def eventFile(rows: Seq[ChangelogRow]): Seq[ChangelogFile] = target.write(JournalPartition, rows.toIndexedSeq)

  private def unexpected(payload: Any): Nothing = throw new IllegalArgumentException(
    s"State '$state': the journal expects the epoch's changelog files as its payload, got ${payload.getClass.getName}")
}
