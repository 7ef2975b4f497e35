package io.sharedstate.core

/**
 * Rebuilds a fresh State from its journal: the events in the order they were journaled, each commit
 * with its tasks' updates in task order, through the same steps as the live calls (progress is
 * published and what it makes final is applied after each event). The lateness decision of every
 * commit is the one that was journaled (its U), not recomputed, so exactly the same updates are
 * accepted and rejected as the first time, whatever the State's U was when a writer joined.
 */
final class StateReplay(state: State) {
  private var done = false

  // Each step returns the updates it rejected (as the live step handed them to the journal).
  def registered(writer: String, frontier: Long): Seq[RejectedUpdate] = {
    check(); state.replayRegistered(writer, frontier)
  }

  def committed(writer: String, epoch: Long, updateProgress: Long, writerProgress: Long, finish: Boolean,
      tasks: Seq[UpdateBatch]): Seq[RejectedUpdate] = {
    check()
    state.replayCommit(writer, epoch, updateProgress, writerProgress, finish, tasks)
  }

  def finished(writer: String): Seq[RejectedUpdate] = { check(); state.replayFinished(writer) }

  def deregistered(writer: String): Seq[RejectedUpdate] = { check(); state.replayDeregistered(writer) }

  /**
   * The State joined a transaction group at `updateProgress`: from here on its U is held at the U its
   * journal recorded (each advance of the group), not its own writers' (alone, they would let it apply
   * plain updates past the group's transactions), and stays held after the replay until the State joins
   * a group again.
   */
  def groupJoined(updateProgress: Long): Seq[RejectedUpdate] = { check(); state.replayGroupJoined(updateProgress) }

  /**
   * An advance of the State's group: the plain updates below `advance.updateProgress` and the pairs the
   * transactions put, per key in (time, tie) order, as the step applied them; then that U is published.
   */
  def groupAdvanced(advance: GroupAdvance): Seq[RejectedUpdate] = {
    check()
    state.replayAdvance(advance.updateProgress) {
      if (advance.pairs.isEmpty) state.applyAndPublish(advance.updateProgress)
      else txn.TransactionRound.replay(state, advance)
    }
  }

  /** Ends the replay: the State is ready for writers and readers. */
  def finish(): Unit = { check(); done = true; state.replayFinish() }

  private def check(): Unit =
    if (done) throw new SharedStateException(s"The replay of State '${state.name}' is already finished.")
}
