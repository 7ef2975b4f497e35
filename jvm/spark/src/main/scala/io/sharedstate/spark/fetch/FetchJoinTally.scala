package io.sharedstate.spark.fetch

import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter

/**
 * What one fetch join task did, for its summary row ([[FetchJoinRows]]): events answered (those with
 * no time included) and their fetch waits, late events, events left waiting and the earliest of their
 * times, and the latest event time seen.
 */
private[sharedstate] final class FetchJoinTally {
  private var answered = 0L
  private var late = 0L
  private var waiting = 0L
  private var minWaiting = Long.MaxValue
  private var maxEvent = Long.MinValue
  private var waitSum = 0L
  private var waitMax = Long.MinValue

  def answer(waitedMs: Long): Unit = {
    answered += 1
    waitSum += waitedMs
    if (waitedMs > waitMax) waitMax = waitedMs
  }

  def seen(time: Long): Unit = if (time > maxEvent) maxEvent = time

  def lateEvent(): Unit = late += 1

  def waits(time: Long): Unit = {
    waiting += 1
    if (time < minWaiting) minWaiting = time
  }

  def waitingCount: Long = waiting

  /** Whether the task did anything to report. */
  def nonEmpty: Boolean = answered > 0 || late > 0 || waiting > 0

  /** The tally into ordinals [at, at + 7) (see FetchJoinRows.schema); extremes of nothing are null. */
  def write(to: UnsafeRowWriter, at: Int): Unit = {
    to.write(at, answered)
    to.write(at + 1, late)
    to.write(at + 2, waiting)
    if (waiting > 0) to.write(at + 3, minWaiting) else to.setNullAt(at + 3)
    if (maxEvent != Long.MinValue) to.write(at + 4, maxEvent) else to.setNullAt(at + 4)
    to.write(at + 5, waitSum)
    if (answered > 0) to.write(at + 6, waitMax) else to.setNullAt(at + 6)
  }
}
