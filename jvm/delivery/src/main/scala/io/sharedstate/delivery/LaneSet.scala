package io.sharedstate.delivery

import io.sharedstate.core.SharedStateException

import java.util.concurrent.atomic.AtomicReferenceArray

/**
 * One channel of an inbox (its input or its replies): a lane per writer, and the reader's rounds over
 * the lanes it has marked "toRead" (Nova section 4.2). A notification marks a lane; each round reads
 * every marked lane (up to `burst` messages in a row); a lane that gave nothing for `idleRounds`
 * rounds is unmarked, its flag cleared, and read once more for what arrived in between.
 * Everything but `lane` runs on the reader's thread.
 */
private[delivery] final class LaneSet[M](
    kind: String,
    maxWriters: Int,
    laneCapacity: Int,
    idleRounds: Int,
    burst: Int,
    wake: () => Unit) {

  private val lanes = new AtomicReferenceArray[Lane[M]](maxWriters)
  private val board = new NotificationBoard(maxWriters)
  private val listener: LaneListener = (lane: Int) => { board.post(lane); wake() }
  private val marked = new Array[Boolean](maxWriters)
  private val idle = new Array[Int](maxWriters)
  private val gotThisRound = new Array[Boolean](maxWriters)

  /** The marked lanes, in the order the round visits them, and their lanes (reader-local copies). */
  private val order = new Array[Int](maxWriters)
  private val orderLanes = new Array[Lane[M]](maxWriters)
  private var markedCount = 0
  private var cursor = 0
  private var inARow = 0

  /** The lane of `writer`, created on first use; only that writer may send on it. */
  def lane(writer: Int): Lane[M] = {
    if (writer < 0 || writer >= maxWriters) {
      throw new SharedStateException(s"$kind writer must be in [0, $maxWriters), got $writer.")
    }
    val existing = lanes.get(writer)
    if (existing != null) existing
    else synchronized {
      if (lanes.get(writer) == null) lanes.set(writer, new Lane[M](writer, laneCapacity, listener))
      lanes.get(writer)
    }
  }

  def anyMarked: Boolean = markedCount > 0

  /** Lanes the reader currently keeps reading without waiting for a notification. */
  def markedLanes: Int = markedCount

  def anyPosted: Boolean = board.anyPosted()

  /**
   * The next message of this channel's current round, or null once every marked lane was found empty
   * during this call and no notification is pending: a message whose send completed before the call
   * is never missed (Lincheck checks this).
   */
  def poll(): M = {
    // Notifications are collected here only when no lane is marked, otherwise at each round's end.
    if (markedCount == 0 && !collectNotifications()) return null.asInstanceOf[M]
    var emptyVisits = 0
    while (true) {
      if (markedCount > 0 && emptyVisits <= markedCount) {
        if (cursor >= markedCount) endRound()
        if (markedCount > 0) {
          val id = order(cursor)
          val m = orderLanes(cursor).poll()
          if (m != null) {
            gotThisRound(id) = true
            inARow += 1
            if (inARow >= burst) { cursor += 1; inARow = 0 }
            return m
          }
          cursor += 1
          inARow = 0
          emptyVisits += 1
        }
      } else if (collectNotifications()) emptyVisits = 0 // a lane unmarked meanwhile was notified
      else return null.asInstanceOf[M]
    }
    null.asInstanceOf[M]
  }

  /** Marks the lanes whose writers posted a notification; true if there was any. */
  private def collectNotifications(): Boolean = {
    var any = false
    var w = 0
    while (w < board.words()) {
      var bits = board.take(w)
      while (bits != 0L) {
        any = true
        val id = (w << 6) + java.lang.Long.numberOfTrailingZeros(bits)
        bits &= bits - 1
        mark(id)
      }
      w += 1
    }
    any
  }

  private def mark(id: Int): Unit = {
    idle(id) = 0
    if (!marked(id)) {
      marked(id) = true
      order(markedCount) = id
      orderLanes(markedCount) = lanes.get(id)
      markedCount += 1
    }
  }

  /** Counts idle rounds, unmarks lanes idle for `idleRounds` rounds and compacts the visit order. */
  private def endRound(): Unit = {
    var keep = 0
    var i = 0
    val n = markedCount
    while (i < n) {
      val id = order(i)
      if (gotThisRound(id)) idle(id) = 0 else idle(id) += 1
      gotThisRound(id) = false
      val stays = idle(id) < idleRounds || !unmark(id)
      if (stays) { order(keep) = id; orderLanes(keep) = orderLanes(i); keep += 1 }
      i += 1
    }
    java.util.Arrays.fill(orderLanes.asInstanceOf[Array[AnyRef]], keep, n, null)
    markedCount = keep
    cursor = 0
    inARow = 0
    collectNotifications() // lanes notified during the round join the next one
  }

  /** True if the lane is unmarked; false if a message slipped in and the reader raised F itself. */
  private def unmark(id: Int): Boolean = {
    val lane = lanes.get(id)
    marked(id) = false
    if (lane.clearFlagAndRecheck() && lane.raiseFlag()) {
      marked(id) = true
      idle(id) = 0
      false
    } else true // either empty (a later send notifies) or a writer raised F and posted a notification
  }
}
