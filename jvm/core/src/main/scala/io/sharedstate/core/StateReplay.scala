package io.sharedstate.core

/**
 * Rebuilds a fresh State from its journal: the events in the order they were journaled, each commit
 * with its tasks' updates in task order. The lateness decision of every commit is the one that was
 * journaled (its U), not recomputed, so the same updates are accepted and rejected as the first time.
 * Accepted updates are staged and applied once [[finish]] publishes U, per key in (timestamp, arrival)
 * order with the same rules: the same values as applying them epoch by epoch, because an accepted
 * update is never below a pair that was already applied when it arrived.
 */
final class StateReplay(state: State) {
  private var done = false

  def registered(writer: String, frontier: Long): Unit = { check(); state.replayRegistered(writer, frontier) }

  def committed(writer: String, epoch: Long, updateProgress: Long, writerProgress: Long, finish: Boolean,
      tasks: Seq[UpdateBatch]): Unit = {
    check()
    state.replayCommit(writer, epoch, updateProgress, writerProgress, finish, tasks)
  }

  def finished(writer: String): Unit = { check(); state.replayFinished(writer) }

  def deregistered(writer: String): Unit = { check(); state.replayDeregistered(writer) }

  /** Publishes the rebuilt U (applying what is final). The State is ready for writers and readers. */
  def finish(): Unit = { check(); done = true; state.replayFinish() }

  private def check(): Unit =
    if (done) throw new SharedStateException(s"The replay of State '${state.name}' is already finished.")
}
