package io.sharedstate.spark.write

import io.sharedstate.spark.cluster.StateController

import io.sharedstate.core.EventTime
import io.sharedstate.core.State.CommitOutcome
import org.apache.spark.sql.connector.write.WriterCommitMessage

/**
 * Commits one epoch of a writer: the writer's new progress is its event-time watermark, the max
 * event time seen minus the allowed lateness, never lower than before. The tasks' changelog files
 * (durable States) go with the commit; the State journals them before applying anything.
 */
private[sharedstate] final class EpochCommitter(state: StateController, writer: String, latenessMicros: Long) {

  /** @param finish the writer finishes with this epoch (a bulk load) */
  def commit(epoch: Long, messages: Array[WriterCommitMessage], finish: Boolean = false): CommitOutcome = {
    val maxSeen = messages.collect { case m: UpdateCommitMessage => m.maxEventTime }
      .foldLeft(EventTime.MinusInfinity)(math.max)
    val previous = state.writerProgress(writer).getOrElse(EventTime.MinusInfinity)
    val progress =
      if (maxSeen == EventTime.MinusInfinity) previous
      else math.max(previous, maxSeen - latenessMicros)
    val files = messages.toSeq.collect { case m: UpdateCommitMessage => m.changelogFiles }.flatten
    state.commitEpoch(writer, epoch, progress, payload = files, finish = finish)
  }
}
