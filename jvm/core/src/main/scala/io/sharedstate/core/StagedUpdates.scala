package io.sharedstate.core

import java.util.Arrays

/**
 * Updates waiting for U, in arrival order, as parallel arrays (no object per update). Used by one
 * thread at a time (the State's committer).
 */
private[core] final class StagedUpdates(initial: Int = 16) {
  var keys = new Array[Key](initial)
  var times = new Array[Long](initial)
  var values = new Array[Array[Byte]](initial)
  var origins = new Array[UpdateOrigin](initial)
  private var n = 0
  private var valueBytes = 0L
  private var minTime = Long.MaxValue

  def size: Int = n
  def bytes: Long = valueBytes + n * MemoryEstimate.PerStaged

  def add(key: Key, time: Long, value: Array[Byte], origin: UpdateOrigin): Unit = {
    if (n == keys.length) grow(n * 2)
    keys(n) = key; times(n) = time; values(n) = value; origins(n) = origin
    n += 1
    valueBytes += value.length
    if (time < minTime) minTime = time
  }

  private def grow(capacity: Int): Unit = {
    keys = Arrays.copyOf(keys, capacity); times = Arrays.copyOf(times, capacity)
    values = Arrays.copyOf(values, capacity); origins = Arrays.copyOf(origins, capacity)
  }

  /** Removes and returns, in arrival order, the updates with time < `progress`; null when there is none. */
  def takeBefore(progress: Long): StagedUpdates = {
    if (n == 0 || minTime >= progress) null
    else {
      var ready = 0
      var i = 0
      while (i < n) { if (times(i) < progress) ready += 1; i += 1 }
      val out = new StagedUpdates(ready)
      var kept = 0
      var newMin = Long.MaxValue
      i = 0
      while (i < n) {
        if (times(i) < progress) out.add(keys(i), times(i), values(i), origins(i))
        else {
          keys(kept) = keys(i); times(kept) = times(i); values(kept) = values(i); origins(kept) = origins(i)
          if (times(i) < newMin) newMin = times(i)
          kept += 1
        }
        i += 1
      }
      Arrays.fill(keys.asInstanceOf[Array[AnyRef]], kept, n, null)
      Arrays.fill(values.asInstanceOf[Array[AnyRef]], kept, n, null)
      Arrays.fill(origins.asInstanceOf[Array[AnyRef]], kept, n, null)
      n = kept
      valueBytes -= out.valueBytes
      minTime = newMin
      out
    }
  }

  /**
   * The updates as [[SlotOrder]] entries for a key table of `capacity` slots, sorted: equal keys end
   * up adjacent, each in arrival order, and the chains then walk the table in slot order instead of
   * at random, which keeps the look-ups of a large apply in cache.
   */
  def orderBySlot(capacity: Int): Array[Long] = {
    val order = new Array[Long](n)
    var i = 0
    while (i < n) { order(i) = SlotOrder.entry(keys(i).hashCode, capacity, i); i += 1 }
    SlotOrder.sort(order)
    order
  }

  def clear(): Unit = {
    Arrays.fill(keys.asInstanceOf[Array[AnyRef]], 0, n, null)
    Arrays.fill(values.asInstanceOf[Array[AnyRef]], 0, n, null)
    Arrays.fill(origins.asInstanceOf[Array[AnyRef]], 0, n, null)
    n = 0; valueBytes = 0L; minTime = Long.MaxValue
  }

  def foreach(f: (Key, Long, Array[Byte]) => Unit): Unit = {
    var i = 0
    while (i < n) { f(keys(i), times(i), values(i)); i += 1 }
  }
}
