package io.sharedstate.core

import java.util.PriorityQueue
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong

/**
 * One partition of a State: the applied entries (key -> ValueSet) and the staged updates that wait
 * for update progress to pass them. Readers never lock: entries are immutable ValueSets published
 * through a ConcurrentHashMap. Staging and applying are called by one committer at a time (the
 * State's commit lock).
 */
final class StatePartition(val id: Int, rule: UpdateRule) {
  private val entries = new ConcurrentHashMap[Key, ValueSet]()
  private val staged = new PriorityQueue[StatePartition.Staged](StatePartition.ByTimeThenArrival)
  private var arrivals = 0L
  private val heldBytes = new AtomicLong()
  private val appliedCount = new AtomicLong()

  def stage(key: Key, time: Long, value: Array[Byte]): Unit = {
    arrivals += 1
    staged.add(new StatePartition.Staged(key, time, value, arrivals))
  }

  /** Applies, in timestamp order, every staged update with time < `progress`. Returns how many. */
  def applyBefore(progress: Long): Int = {
    var n = 0
    while (!staged.isEmpty && staged.peek().time < progress) {
      val u = staged.poll()
      val before = entries.get(u.key)
      val set = if (before == null) ValueSet.Empty else before
      val i = set.latestIndex(u.time)
      val previous = if (i >= 0) set.valueAt(i) else null
      val after = set.withPair(u.time, rule(previous, u.value))
      entries.put(u.key, after)
      val keyBytes = if (before == null) u.key.bytes.length.toLong else 0L
      val prevPayload = if (before == null) 0L else before.payloadBytes
      heldBytes.addAndGet(keyBytes + after.payloadBytes - prevPayload)
      n += 1
    }
    appliedCount.addAndGet(n)
    n
  }

  def get(key: Key): ValueSet = entries.get(key)

  def stagedCount: Int = staged.size
  def keyCount: Int = entries.size
  def bytesHeld: Long = heldBytes.get()
  def updatesApplied: Long = appliedCount.get()

  /** A weakly consistent view of the entries, for scans such as an as-of read. */
  def foreachEntry(f: (Key, ValueSet) => Unit): Unit = entries.forEach((k, v) => f(k, v))
}

object StatePartition {
  final class Staged(val key: Key, val time: Long, val value: Array[Byte], val arrival: Long)

  // Same timestamp, same key: the later arrival wins under `replace`, as the brief requires.
  private val ByTimeThenArrival: java.util.Comparator[Staged] = (a: Staged, b: Staged) => {
    val c = java.lang.Long.compare(a.time, b.time)
    if (c != 0) c else java.lang.Long.compare(a.arrival, b.arrival)
  }
}
