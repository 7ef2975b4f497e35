package io.sharedstate.core

import java.util.Arrays

/**
 * The versions of one key: (timestamp, value) pairs sorted by timestamp. Immutable, so readers
 * never lock; the single applier of a key publishes a new ValueSet for each change.
 *
 * Everything lives in one byte array (`packed`): the pair count, the timestamps, the value ends and
 * the values end to end. One array per key, not three: a look-up of a large State then costs one
 * cache miss for the whole set (the lines of one array are fetched in parallel once its address is
 * known) instead of a miss for the set and one more for each of its arrays, and the heap holds two
 * array headers less per key. The key table ([[KeyTable]]) stores the packed array itself; a
 * ValueSet is a view on it, allocated per read and usually scalarised by the JIT.
 *
 * Layout, little-endian: `n` (int32), 4 bytes of padding, `n` timestamps (int64), `n` value ends
 * (int32, relative to the first value), the values.
 */
final class ValueSet private[core] (private[core] val packed: Array[Byte]) {
  import ValueSet._

  def size: Int = PackedBytes.getInt(packed, 0)
  def isEmpty: Boolean = size == 0
  def timeAt(i: Int): Long = PackedBytes.getLong(packed, TimesAt + 8 * i)
  def lastTime: Long = timeAt(size - 1)

  private def dataStart: Int = TimesAt + 12 * size
  private def endAt(i: Int): Int = PackedBytes.getInt(packed, TimesAt + 8 * size + 4 * i)

  /** A copy of value i. */
  def valueAt(i: Int): Array[Byte] = {
    val n = size
    val base = TimesAt + 12 * n
    val ends = TimesAt + 8 * n
    val from = if (i == 0) 0 else PackedBytes.getInt(packed, ends + 4 * (i - 1))
    Arrays.copyOfRange(packed, base + from, base + PackedBytes.getInt(packed, ends + 4 * i))
  }

  /** Where value i starts in [[packedValues]]. */
  def valueOffset(i: Int): Int = dataStart + (if (i == 0) 0 else endAt(i - 1))
  def valueLength(i: Int): Int = endAt(i) - (if (i == 0) 0 else endAt(i - 1))

  /** Pair i is a transaction's delete ([[ValueSet.Deleted]]). */
  def isDeleted(i: Int): Boolean = valueLength(i) == 0

  /** The array holding the values, to read value i in place at [valueOffset(i), valueOffset(i) + valueLength(i)). */
  def packedValues: Array[Byte] = packed

  /** Index of the pair with the largest timestamp <= t, or -1. */
  def latestIndex(t: Long): Int = {
    val n = size
    // Most fetches ask for the newest pair: check it before searching.
    if (n == 0) -1
    else if (timeAt(n - 1) <= t) n - 1
    else {
      var lo = 0
      var hi = n - 2 // the newest is above t
      while (lo <= hi) {
        val mid = (lo + hi) >>> 1
        if (timeAt(mid) <= t) lo = mid + 1 else hi = mid - 1
      }
      hi
    }
  }

  /** Index of the first pair with timestamp >= t (size when there is none). */
  def firstIndexAtOrAfter(t: Long): Int = {
    var lo = 0
    var hi = size - 1
    while (lo <= hi) {
      val mid = (lo + hi) >>> 1
      if (timeAt(mid) < t) lo = mid + 1 else hi = mid - 1
    }
    lo
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
      val n = size
      val m = n - from
      val skipped = endAt(from - 1)
      val bytes = endAt(n - 1) - skipped
      val out = allocate(m, bytes)
      var i = 0
      while (i < m) {
        PackedBytes.putLong(out, TimesAt + 8 * i, timeAt(from + i))
        PackedBytes.putInt(out, TimesAt + 8 * m + 4 * i, endAt(from + i) - skipped)
        i += 1
      }
      System.arraycopy(packed, dataStart + skipped, out, TimesAt + 12 * m, bytes)
      new ValueSet(out)
    }

  /** Raw bytes of timestamps and values (keys are counted by the partition). */
  def payloadBytes: Long = {
    val n = size
    if (n == 0) 0L else 8L * n + endAt(n - 1)
  }
}

object ValueSet {
  private[core] val TimesAt = 8

  private def allocate(pairs: Int, valueBytes: Int): Array[Byte] = {
    val a = new Array[Byte](TimesAt + 12 * pairs + valueBytes)
    PackedBytes.putInt(a, 0, pairs)
    a
  }

  val Empty: ValueSet = new ValueSet(allocate(0, 0))

  /** Bytes of the packed array of a set of `pairs` pairs holding `valueBytes` value bytes (its header aside). */
  def packedLength(pairs: Int, valueBytes: Long): Long = TimesAt + 12L * pairs + valueBytes

  /**
   * The value of a pair a transaction's delete stored: empty (a value row of a State's value type is
   * never empty: it holds at least its null bitset). Fetches read it as no value at that time.
   */
  val Deleted: Array[Byte] = Array.emptyByteArray

  /** A set of the given pairs (times ascending, distinct). */
  def of(times: Array[Long], values: Array[Array[Byte]]): ValueSet = {
    val b = new Builder(Empty, times.length, 0)
    var i = 0
    while (i < times.length) { b.put(times(i), values(i)); i += 1 }
    b.result()
  }

  /**
   * Builds the successor of a set from a chain of updates. Appending at or after the newest pair is
   * the common case (updates arrive above U, and every applied pair is below U): the base set is
   * read in place, the new pairs are kept by reference, and [[result]] writes the packed array once.
   * `extraPairs` and `extraBytes` are sizing hints.
   */
  final class Builder(base: ValueSet, extraPairs: Int, extraBytes: Int) {
    // The first `keep` pairs of `from`, then the `added` pairs in times/values.
    private var from = base
    private var keep = base.size
    private var times = new Array[Long](math.max(extraPairs, 1))
    private var values = new Array[Array[Byte]](times.length)
    private var added = 0

    def size: Int = keep + added
    def lastTime: Long = if (added > 0) times(added - 1) else from.timeAt(keep - 1)
    def lastValue: Array[Byte] = if (added > 0) values(added - 1).clone() else from.valueAt(keep - 1)

    /** Value at the largest timestamp <= t, or null (a copy: a rule may keep or change it). */
    def valueAtOrBefore(t: Long): Array[Byte] = {
      if (added > 0 && times(0) <= t) {
        var i = added - 1
        while (times(i) > t) i -= 1
        values(i).clone()
      } else if (keep == 0) null
      else {
        var i = if (from.timeAt(keep - 1) <= t) keep - 1 else from.latestIndex(t)
        if (i >= keep) i = keep - 1
        if (i < 0) null else from.valueAt(i)
      }
    }

    def put(t: Long, value: Array[Byte]): Unit = {
      if (added > 0) {
        val last = times(added - 1)
        if (last == t) values(added - 1) = value // replace the newest pair
        else if (last < t) append(t, value)
        else insert(t, value)
      } else if (keep == 0 || from.timeAt(keep - 1) < t) append(t, value)
      else if (from.timeAt(keep - 1) == t) { keep -= 1; append(t, value) } // replace the newest pair
      else insert(t, value)
    }

    private def append(t: Long, value: Array[Byte]): Unit = {
      if (added == times.length) {
        times = Arrays.copyOf(times, added * 2)
        values = Arrays.copyOf(values, added * 2)
      }
      times(added) = t
      values(added) = value
      added += 1
    }

    // Rare: a pair older than the newest (only after a reopened State): every pair goes to the list.
    private def insert(t: Long, value: Array[Byte]): Unit = {
      val n = keep + added
      val ts = new Array[Long](n + 1)
      val vs = new Array[Array[Byte]](n + 1)
      var k = 0
      var placed = false
      def emit(time: Long, v: Array[Byte]): Unit = {
        if (!placed && t <= time) {
          ts(k) = t; vs(k) = value; k += 1; placed = true
          if (t == time) return // replaced
        }
        ts(k) = time; vs(k) = v; k += 1
      }
      var i = 0
      while (i < keep) { emit(from.timeAt(i), from.valueAt(i)); i += 1 }
      i = 0
      while (i < added) { emit(times(i), values(i)); i += 1 }
      if (!placed) { ts(k) = t; vs(k) = value; k += 1 }
      from = Empty; keep = 0
      times = if (k == ts.length) ts else Arrays.copyOf(ts, math.max(k, 1))
      values = if (k == vs.length) vs else Arrays.copyOf(vs, math.max(k, 1))
      added = k
    }

    def result(): ValueSet = {
      if (added == 0 && keep == from.size) from
      else {
        val n = keep + added
        val kept = if (keep == 0) 0 else from.endAt(keep - 1)
        var bytes = kept
        var i = 0
        while (i < added) { bytes += values(i).length; i += 1 }
        val out = allocate(n, bytes)
        val ends = TimesAt + 8 * n
        val data = TimesAt + 12 * n
        // The kept pairs: timestamps, ends (unchanged, relative to the first value) and values, in place.
        System.arraycopy(from.packed, TimesAt, out, TimesAt, 8 * keep)
        System.arraycopy(from.packed, TimesAt + 8 * from.size, out, ends, 4 * keep)
        System.arraycopy(from.packed, from.dataStart, out, data, kept)
        var end = kept
        i = 0
        while (i < added) {
          val v = values(i)
          PackedBytes.putLong(out, TimesAt + 8 * (keep + i), times(i))
          System.arraycopy(v, 0, out, data + end, v.length)
          end += v.length
          PackedBytes.putInt(out, ends + 4 * (keep + i), end)
          i += 1
        }
        new ValueSet(out)
      }
    }
  }
}
