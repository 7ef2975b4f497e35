package io.sharedstate.delivery

import io.sharedstate.core.SharedStateException

import java.util.concurrent.TimeUnit
import java.util.concurrent.locks.LockSupport

/**
 * The receiving end of Nova's conflict-free message delivery, for one reader thread (a State
 * partition, or a task waiting for replies). Every writer gets its own single-writer lane, so writers
 * never contend with each other, and the reader contends with a writer only through a lane's
 * notification flag. Two channels:
 *
 *  - input: requests and stream messages; messages of one lane arrive in send order, which is what
 *    update-progress acceleration needs: a progress message sent on the same lane after a writer's
 *    updates is read after all of them.
 *  - replies: answers to this reader's own requests. They have priority: `poll` returns a reply
 *    whenever one is visible, before any input.
 *
 * `poll` and `take` must be called by one thread at a time; `inputLane` and `replyLane` by anyone.
 *
 * @param idleRounds K: rounds a marked lane may stay empty before the reader unmarks it (Nova: 100)
 * @param burst      messages taken from one lane in a row before the round moves to the next lane
 */
final class Inbox[M](
    maxWriters: Int,
    maxRepliers: Int,
    laneCapacity: Int = Inbox.DefaultLaneCapacity,
    idleRounds: Int = Inbox.DefaultIdleRounds,
    burst: Int = Inbox.DefaultBurst) {
  Inbox.validate(maxWriters, maxRepliers, laneCapacity, idleRounds, burst)

  @volatile private var waiter: Thread = _
  private val wake: () => Unit = () => {
    val w = waiter
    if (w != null) LockSupport.unpark(w)
  }
  private val input = new LaneSet[M]("input", maxWriters, laneCapacity, idleRounds, burst, wake)
  private val replies = new LaneSet[M]("reply", maxRepliers, laneCapacity, idleRounds, burst, wake)

  /** An input message taken just before a reply showed up; it is the next input returned. */
  private var heldInput: M = _

  /** The input lane of `writer` (one thread sends on it). */
  def inputLane(writer: Int): Lane[M] = input.lane(writer)

  /** The reply lane of `replier` (one thread sends on it). */
  def replyLane(replier: Int): Lane[M] = replies.lane(replier)

  /** Input lanes the reader keeps reading in rounds (they are "toRead"). */
  def markedInputLanes: Int = input.markedLanes

  /** The next message, replies first; null if none is visible now. Never blocks. */
  def poll(): M = {
    if (maxRepliers == 0) return input.poll()
    val reply = replies.poll()
    if (reply != null) return reply
    val in = if (heldInput != null) { val h = heldInput; heldInput = null.asInstanceOf[M]; h }
    else input.poll()
    if (in == null) return in
    // A reply sent before this input became visible must still win: look again now that we hold it.
    val late = replies.poll()
    if (late == null) in else { heldInput = in; late }
  }

  /**
   * The next message, waiting up to `timeout`; null on timeout. While some lane is marked the reader
   * keeps reading in rounds; once all are unmarked it parks until a writer notifies.
   */
  def take(timeout: Long, unit: TimeUnit): M = {
    val deadline = System.nanoTime() + unit.toNanos(timeout)
    var result = poll()
    while (result == null) {
      val left = deadline - System.nanoTime()
      if (left <= 0) return null.asInstanceOf[M]
      if (input.anyMarked || replies.anyMarked) Thread.onSpinWait()
      else {
        waiter = Thread.currentThread()
        // Re-check after publishing `waiter`: a writer that posted before would not have seen it.
        if (heldInput == null && !input.anyPosted && !replies.anyPosted) LockSupport.parkNanos(this, left)
        waiter = null
        if (Thread.interrupted()) throw new InterruptedException("interrupted while waiting for a message")
      }
      result = poll()
    }
    result
  }
}

object Inbox {

  /** Nova's queue length for its X:1 test. */
  val DefaultLaneCapacity = 65536

  /** Nova's K. */
  val DefaultIdleRounds = 100
  val DefaultBurst = 256

  private def validate(maxWriters: Int, maxRepliers: Int, laneCapacity: Int, idleRounds: Int, burst: Int): Unit = {
    if (maxWriters < 1) throw new SharedStateException(s"maxWriters must be at least 1, got $maxWriters.")
    if (maxRepliers < 0) throw new SharedStateException(s"maxRepliers must be at least 0, got $maxRepliers.")
    if (laneCapacity < 2 || Integer.bitCount(laneCapacity) != 1) {
      throw new SharedStateException(s"laneCapacity must be a power of two >= 2, got $laneCapacity.")
    }
    if (idleRounds < 1) throw new SharedStateException(s"idleRounds must be at least 1, got $idleRounds.")
    if (burst < 1) throw new SharedStateException(s"burst must be at least 1, got $burst.")
  }
}
