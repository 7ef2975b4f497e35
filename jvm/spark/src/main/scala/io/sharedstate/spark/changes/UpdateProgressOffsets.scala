package io.sharedstate.spark.changes

import io.sharedstate.spark.cluster.StateController

import io.sharedstate.core.EventTime
import org.apache.spark.sql.connector.read.streaming.{MicroBatchStream, Offset}

/**
 * Micro-batch offsets that are update progress U ([[ChangeOffset]]). U never goes back, except when
 * a writer reopens a State that every writer had finished (U was +infinity); offsets do not go back
 * with it.
 */
private[sharedstate] trait UpdateProgressOffsets extends MicroBatchStream {
  protected def state: StateController
  @volatile private var highest: Long = EventTime.MinusInfinity

  override def latestOffset(): Offset = {
    highest = math.max(highest, state.updateProgress)
    ChangeOffset(highest)
  }

  override def deserializeOffset(json: String): Offset = ChangeOffset(json.trim.toLong)

  /** (from, until) of a batch; a restarted stream does not offer less than what it already planned. */
  protected def range(start: Offset, end: Offset): (Long, Long) = {
    val until = end.asInstanceOf[ChangeOffset].until
    highest = math.max(highest, until)
    (start.asInstanceOf[ChangeOffset].until, until)
  }
}
