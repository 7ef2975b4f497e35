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

  /**
   * The State joined transaction group `group` at U `updateProgress`: from this event on its U is the
   * group's (a writer of another member holds it back too), so a replay holds U at the journaled ones
   * (see [[StateReplay.groupJoined]]). A journal that cannot record transactions refuses (the default).
   */
  def groupJoined(group: String, updateProgress: Long): Unit = throw new SharedStateException(
    s"This State's journal (${getClass.getSimpleName}) does not record transactions: the State cannot join " +
      s"transaction group '$group'.")

  /**
   * The State's group advanced U to `advance.updateProgress`, with the pairs its transactions put in
   * this State in that step (none when no transaction was ready); called before U is published. If it
   * throws, U is not published (the pairs may already be in the State: the journal must refuse further
   * steps then).
   */
  def groupAdvanced(advance: GroupAdvance): Unit = throw new SharedStateException(
    s"This State's journal (${getClass.getSimpleName}) does not record transactions.")
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

/**
 * One advance of a transaction group's U as a member's journal records it: the new U, and the pairs the
 * step's transactions put in the member (the committed transactions' writes stored at their times, not
 * rule applications; a delete is an empty value), per key in the order they were put ((time, tie)
 * order). Replay puts them in that order among the plain updates the same U makes final, then publishes
 * `updateProgress`. Every advance is journaled, with pairs or not, so a member replayed alone reaches
 * exactly the U it had.
 */
final case class GroupAdvance(updateProgress: Long, pairs: IndexedSeq[GroupAdvance.Pair])

object GroupAdvance {

  /** One pair: key and value bytes as the State stores them, the time it was put at. */
  final case class Pair(key: Array[Byte], time: Long, value: Array[Byte])
}
