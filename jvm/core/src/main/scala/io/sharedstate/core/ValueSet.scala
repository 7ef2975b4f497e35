package io.sharedstate.core

import java.util.Arrays

/**
 * The versions of one key: (timestamp, value) pairs sorted by timestamp. Immutable, so readers
 * never lock; the single applier of a key publishes a new ValueSet for each change. Values are packed
 * end to end in one byte array (`ends(i)` is where value i stops), so a key with eight versions is
 * four objects, not eleven: that is what keeps the heap near the raw bytes.
 */
final class ValueSet private (
    private val times: Array[Long],
    private val ends: Array[Int],
    private val data: Array[Byte]) {

  def size: Int = times.length
  def isEmpty: Boolean = times.length == 0
  def timeAt(i: Int): Long = times(i)
  def lastTime: Long = times(times.length - 1)

  /** A copy of value i. */
  def valueAt(i: Int): Array[Byte] = Arrays.copyOfRange(data, valueOffset(i), ends(i))
  def valueOffset(i: Int): Int = if (i == 0) 0 else ends(i - 1)
  def valueLength(i: Int): Int = ends(i) - valueOffset(i)

  /** Pair i is a transaction's delete ([[ValueSet.Deleted]]). */
  def isDeleted(i: Int): Boolean = valueLength(i) == 0

  /** The packed value bytes, to read value i in place at [valueOffset(i), valueOffset(i) + valueLength(i)). */
  def packedValues: Array[Byte] = data

  /** Index of the pair with the largest timestamp <= t, or -1. */
  def latestIndex(t: Long): Int = {
    val n = times.length
    // Most fetches ask for the newest pair: check it before searching.
    if (n > 0 && times(n - 1) <= t) n - 1
    else {
      val i = Arrays.binarySearch(times, 0, n, t)
      if (i >= 0) i else -(i + 1) - 1
    }
  }

  /** Index of the first pair with timestamp >= t (size when there is none). */
  def firstIndexAtOrAfter(t: Long): Int = {
    val i = Arrays.binarySearch(times, t)
    if (i >= 0) i else -(i + 1)
  }

  /** This set with `value` stored at `t`; a pair already at `t` is replaced. */
  def withPair(t: Long, value: Array[Byte]): ValueSet = {
    val b = new ValueSet.Builder(this, 1, value.length)
    b.put(t, value)
    b.result()
  }

  /** The pairs from index `from` on (the older ones are dropped by compaction). */
  def dropBefore(from: Int): ValueSet =
    if (from <= 0) this
    else if (from >= size) ValueSet.Empty
    else {
      val start = valueOffset(from)
      val ts = Arrays.copyOfRange(times, from, times.length)
      val es = new Array[Int](ts.length)
      var i = 0
      while (i < es.length) { es(i) = ends(from + i) - start; i += 1 }
      new ValueSet(ts, es, Arrays.copyOfRange(data, start, ends(ends.length - 1)))
    }

  /** Raw bytes of timestamps and values (keys are counted by the partition). */
  def payloadBytes: Long = 8L * times.length + data.length
}

object ValueSet {
  val Empty: ValueSet = new ValueSet(Array.emptyLongArray, Array.emptyIntArray, Array.emptyByteArray)

  /**
   * The value of a pair a transaction's delete stored: empty (a value row of a State's value type is
   * never empty: it holds at least its null bitset). Fetches read it as no value at that time.
   */
  val Deleted: Array[Byte] = Array.emptyByteArray

  /** A set of the given pairs (times ascending, distinct). */
  def of(times: Array[Long], values: Array[Array[Byte]]): ValueSet = {
    val b = new Builder(Empty, times.length, values.iterator.map(_.length).sum)
    var i = 0
    while (i < times.length) { b.put(times(i), values(i)); i += 1 }
    b.result()
  }

  /**
   * Builds the successor of a set from a chain of updates. Appending at or after the newest pair is
   * the common case (updates arrive above U, and every applied pair is below U) and costs no search.
   */
  final class Builder(base: ValueSet, extraPairs: Int, extraBytes: Int) {
    private var times = Arrays.copyOf(base.times, base.size + math.max(extraPairs, 1))
    private var ends = Arrays.copyOf(base.ends, times.length)
    private var data = Arrays.copyOf(base.data, base.data.length + math.max(extraBytes, 0))
    private var n = base.size

    def size: Int = n
    def lastTime: Long = times(n - 1)
    def lastValue: Array[Byte] = Arrays.copyOfRange(data, if (n == 1) 0 else ends(n - 2), ends(n - 1))

    /** Value at the largest timestamp <= t, or null. */
    def valueAtOrBefore(t: Long): Array[Byte] = {
      if (n == 0) null
      else if (times(n - 1) <= t) lastValue
      else {
        val i = Arrays.binarySearch(times, 0, n, t)
        val at = if (i >= 0) i else -(i + 1) - 1
        if (at < 0) null else Arrays.copyOfRange(data, if (at == 0) 0 else ends(at - 1), ends(at))
      }
    }

    def put(t: Long, value: Array[Byte]): Unit = {
      if (n > 0 && times(n - 1) == t) {
        n -= 1 // replace the newest pair
        append(t, value)
      } else if (n == 0 || times(n - 1) < t) append(t, value)
      else insert(t, value)
    }

    private def append(t: Long, value: Array[Byte]): Unit = {
      val start = if (n == 0) 0 else ends(n - 1)
      ensure(n + 1, start + value.length)
      times(n) = t
      System.arraycopy(value, 0, data, start, value.length)
      ends(n) = start + value.length
      n += 1
    }

    // Rare: a pair older than the newest (only after a reopened State); rebuild around it.
    private def insert(t: Long, value: Array[Byte]): Unit = {
      val current = result()
      val i = Arrays.binarySearch(current.times, t)
      val at = if (i >= 0) i else -(i + 1)
      val replaced = if (i >= 0) 1 else 0
      val ts = new Array[Long](current.size + 1 - replaced)
      val vs = new Array[Array[Byte]](ts.length)
      var j = 0
      var k = 0
      while (j < current.size) {
        if (j == at) { ts(k) = t; vs(k) = value; k += 1 }
        if (!(j == at && replaced == 1)) { ts(k) = current.times(j); vs(k) = current.valueAt(j); k += 1 }
        j += 1
      }
      if (at == current.size) { ts(k) = t; vs(k) = value }
      val rebuilt = ValueSet.of(ts, vs)
      times = Arrays.copyOf(rebuilt.times, rebuilt.size + 1)
      ends = Arrays.copyOf(rebuilt.ends, rebuilt.size + 1)
      data = rebuilt.data
      n = rebuilt.size
    }

    private def ensure(pairs: Int, bytes: Int): Unit = {
      if (pairs > times.length) {
        times = Arrays.copyOf(times, pairs * 2)
        ends = Arrays.copyOf(ends, pairs * 2)
      }
      if (bytes > data.length) data = Arrays.copyOf(data, math.max(bytes, data.length * 2))
    }

    def result(): ValueSet = {
      val used = if (n == 0) 0 else ends(n - 1)
      new ValueSet(
        if (times.length == n) times else Arrays.copyOf(times, n),
        if (ends.length == n) ends else Arrays.copyOf(ends, n),
        if (data.length == used) data else Arrays.copyOf(data, used)
      )
    }
  }
}
