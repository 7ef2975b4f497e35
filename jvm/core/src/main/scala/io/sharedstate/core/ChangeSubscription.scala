package io.sharedstate.core

import java.util.concurrent.locks.ReentrantLock
import scala.collection.mutable.ArrayBuffer

/**
 * One reader of a State's [[ChangeFeed]] (a change-stream query): every pair with timestamp >= `from`
 * that is final, each once, in (timestamp, partition, key bytes) order. What it has received stays in
 * its buffer until the consumer commits past it, so a re-planned batch reads the same changes.
 *
 * Pairs in [from, joinedAt) were final before the subscription joined the feed; they are read once
 * from the State (an O(keys) scan, done lazily by the consumer, not under any lock the committer
 * takes). Pairs from joinedAt on come from the feed. The seam is exact: the subscription joined at the
 * anchor's position under the commit lock, right after the round that made U = joinedAt.
 */
final class ChangeSubscription private[core] (feed: ChangeFeed, val id: Long, private[core] val slot: Int,
    val from: Long, val joinedAt: Long, before: (Long, Long) => Array[Change], onClose: ChangeSubscription => Unit) {

  private val lock = new ReentrantLock() // the ESG reader slot: one thread at a time
  private val buffer = ArrayBuffer.empty[Change] // from the feed, at or above max(from, joinedAt), in order
  private val seamLock = new Object
  private var seam: Array[Change] = null // [from, joinedAt), read on first use
  @volatile private var floor: Long = from // committed: nothing below is kept or served
  @volatile private var closed = false

  /** Every final pair below it is available to [[changes]] (the feed's frontier). */
  def completeThrough: Long = feed.frontier

  /**
   * The pairs with from <= timestamp < until in order. `from` must not be below what was committed,
   * nor `until` above [[completeThrough]].
   */
  def changes(from: Long, until: Long): Array[Change] = {
    checkOpen()
    val complete = feed.frontier // read before the drain: every pair below it is ready in the slot
    if (until > complete) throw new SharedStateException(s"Changes up to ${EventTime.show(until)} are not final in " +
      s"this change subscription yet (its feed reached ${EventTime.show(complete)}).")
    if (from < floor) throw new SharedStateException(s"Changes from ${EventTime.show(from)} were committed already " +
      s"(this change subscription keeps them from ${EventTime.show(floor)} on).")
    val fromFeed = withSlot { drain(); slice(buffer, from, until) }
    if (from >= joinedAt || until <= this.from) fromFeed
    else seamChanges(from, math.min(until, joinedAt)) ++ fromFeed
  }

  /** Changes from here on can still be read (what is below was committed). */
  def keptFrom: Long = floor

  /** Waits (at most `timeoutMs`) until [[completeThrough]] passes `beyond`; returns it. */
  def awaitBeyond(beyond: Long, timeoutMs: Long): Long = { checkOpen(); feed.awaitBeyond(beyond, timeoutMs) }

  /** The consumer has everything below `until`: the subscription forgets it. */
  def commit(until: Long): Unit = if (until > floor) {
    floor = until
    withSlot {
      val keep = firstAtOrAfter(buffer, until)
      if (keep > 0) buffer.remove(0, keep)
    }
    seamLock.synchronized {
      if (until >= joinedAt) seam = Array.empty
      else if (seam != null) seam = seam.drop(firstAtOrAfter(seam, until))
    }
  }

  /** Leaves the feed; the State drops the feed with its last subscription. */
  def close(): Unit = if (!closed) onClose(this)

  def isClosed: Boolean = closed

  // ---- feed side ----

  private[core] def drainFromCommitter(): Unit = withSlot(drain())

  private[core] def markClosed(): Unit = withSlot { closed = true; buffer.clear() }

  // ---- internals ----

  private def withSlot[T](body: => T): T = {
    lock.lock()
    try body
    finally lock.unlock()
  }

  private def drain(): Unit = if (!closed) {
    val lowest = math.max(from, floor)
    feed.drainSlot(slot, c => if (c.time >= lowest) buffer += c)
  }

  private def seamChanges(from: Long, until: Long): Array[Change] = seamLock.synchronized {
    if (seam == null) seam = before(math.max(this.from, floor), joinedAt)
    slice(seam, from, until)
  }

  private def checkOpen(): Unit = {
    feed.checkOpen()
    if (closed) throw new SharedStateException(s"Change subscription $id is closed.")
  }

  private def slice(in: ArrayBuffer[Change], from: Long, until: Long): Array[Change] =
    in.slice(firstAtOrAfter(in.length, in(_).time, from), firstAtOrAfter(in.length, in(_).time, until)).toArray

  private def slice(in: Array[Change], from: Long, until: Long): Array[Change] =
    java.util.Arrays.copyOfRange(in, firstAtOrAfter(in, from), firstAtOrAfter(in, until))

  private def firstAtOrAfter(in: ArrayBuffer[Change], t: Long): Int = firstAtOrAfter(in.length, in(_).time, t)
  private def firstAtOrAfter(in: Array[Change], t: Long): Int = firstAtOrAfter(in.length, in(_).time, t)

  // Binary search: the first index whose time is >= t (times ascend).
  private def firstAtOrAfter(n: Int, timeAt: Int => Long, t: Long): Int = {
    var lo = 0
    var hi = n
    while (lo < hi) {
      val mid = (lo + hi) >>> 1
      if (timeAt(mid) < t) lo = mid + 1 else hi = mid
    }
    lo
  }
}
