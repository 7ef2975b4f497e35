package io.sharedstate.core

/**
 * Where a State records the events that change its update progress, so it can be rebuilt after a
 * restart (the durability layer implements it). Each call is made under the State's commit lock
 * before the change becomes visible; if it throws, the change does not happen. So U never runs
 * ahead of what the journal holds, and the journal's order is the State's commit order.
 */
trait StateJournal {

  /** A writer joined (or rejoined after finishing) at `frontier`, the progress it starts with. */
  def writerRegistered(writer: String, frontier: Long): Unit

  /** An epoch is about to be applied; see [[JournalCommit]]. */
  def epochCommitting(commit: JournalCommit): Unit

  /** A writer finished (it no longer holds U back). */
  def writerFinished(writer: String): Unit

  /** A writer was forgotten with what it had staged. */
  def writerDeregistered(writer: String): Unit

  /**
   * What the step just journaled rejected (late or null at admission, or the update rule failing when
   * U made it final), in rejection order. Called under the commit lock at the end of the step, after
   * the step's own event, only when it rejected something; the step's change is already applied.
   */
  def updatesRejected(rejected: Seq[RejectedUpdate]): Unit = ()
}

/**
 * One epoch commit as the journal sees it.
 *
 * @param updateProgress U at the commit: the updates of the epoch below it are late. Replay uses it
 *                       to reject exactly the updates that were rejected the first time.
 * @param writerProgress the writer's progress after the commit
 * @param finish         the writer finishes with this epoch (a bulk load)
 * @param payload        what the caller handed to commitEpoch for the journal (the epoch's data files)
 */
final case class JournalCommit(
    writer: String,
    epoch: Long,
    updateProgress: Long,
    writerProgress: Long,
    finish: Boolean,
    payload: AnyRef)
