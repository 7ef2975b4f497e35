package io.sharedstate.core

import java.util.Arrays

/**
 * The versions of one key: (timestamp, value) pairs sorted by timestamp. A ValueSet is an immutable
 * view, so readers never lock; the single applier of a key publishes each change.
 *
 * Everything lives in one byte array (`packed`): the pair count, the capacity, the timestamps, the
 * value ends and the values end to end. One array per key, not three: a look-up of a large State then
 * costs one cache miss for the whole set (the lines of one array are fetched in parallel once its
 * address is known) instead of a miss for the set and one more for each of its arrays, and the heap
 * holds two array headers less per key. The key table ([[KeyTable]]) stores the packed array itself; a
 * ValueSet is a view on it, allocated per read and usually scalarised by the JIT.
 *
 * Layout, little-endian: `n` (int32; its top bit marks a sealed array), the capacity `c` (int32), the
 * key's length `kl` (int32; -1 when the array does not say whose set it is), 4 spare bytes, the key's
 * bytes (at least 16 bytes of room, zeros past the key, rounded up to 8), `c` timestamp slots (int64),
 * `c` value-end slots (int32, relative to the first value), then the values. The key is kept here, in
 * the array's first line, so a look-up confirms it has the right set from the set itself and never reads
 * the stored key object: one cache miss, and one page walk, less per look-up of a large State
 * ([[ValueSet.keyMatch]]).
 * An array may have room past its `n` pairs (spare slots, spare value bytes): the key's applier appends
 * a newer pair there in place ([[ValueSet.Builder.appendInPlace]]: written past `n`, then published by
 * a compare-and-set of `n`), which saves copying the older pairs and the garbage of a new array for the
 * common case, a key's next version. What a view shows never changes: it holds the count it was made
 * with, and bytes below a published count are never written again. Whoever replaces an array in the key
 * table other than its applier (a compaction) seals it first ([[ValueSet.seal]]), so no append can land
 * in an array that is no longer the key's.
 */
final class ValueSet private[core] (private[core] val packed: Array[Byte], val size: Int) {
  import ValueSet._

  /** A view of the pairs `packed` holds now. */
  private[core] def this(packed: Array[Byte]) = this(packed, ValueSet.countOf(packed))

  private val capacity = PackedBytes.getInt(packed, 4)
  private val timesAt = timesAtOf(PackedBytes.getInt(packed, KeyLengthAt))

  def isEmpty: Boolean = size == 0
  def timeAt(i: Int): Long = PackedBytes.getLong(packed, timesAt + 8 * i)
  def lastTime: Long = timeAt(size - 1)

  private def endsStart: Int = timesAt + 8 * capacity
  private def dataStart: Int = timesAt + 12 * capacity

  /** The length of the key this array keeps (its bytes at [[ValueSet.KeyAt]]), or -1 when it keeps none. */
  private[core] def keptKeyLength: Int = PackedBytes.getInt(packed, KeyLengthAt)

  /** The bytes of the key whose set this is, or null when the array does not say. */
  private[core] def keyBytes: Array[Byte] = {
    val kl = PackedBytes.getInt(packed, KeyLengthAt)
    if (kl < 0) null else Arrays.copyOfRange(packed, KeyAt, KeyAt + kl)
  }
  private def endAt(i: Int): Int = PackedBytes.getInt(packed, endsStart + 4 * i)

  /** A copy of value i. */
  def valueAt(i: Int): Array[Byte] = {
    val from = if (i == 0) 0 else endAt(i - 1)
    Arrays.copyOfRange(packed, dataStart + from, dataStart + endAt(i))
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
    else if (n <= ValueSet.ScanPairs) {
      // A short set is counted, not searched: a loop whose steps do not branch on the times (the
      // search's branches go either way at random, a mispredict each), over lines already in cache.
      var below = 0
      var i = 0
      while (i < n - 1) { below += (if (timeAt(i) <= t) 1 else 0); i += 1 }
      below - 1
    } else {
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
    val b = new ValueSet.Builder(keyBytes, this, 1, value.length)
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
      val out = allocate(m, bytes, m, bytes, keyBytes)
      val at = timesAtOf(PackedBytes.getInt(out, KeyLengthAt))
      var i = 0
      while (i < m) {
        PackedBytes.putLong(out, at + 8 * i, timeAt(from + i))
        PackedBytes.putInt(out, at + 8 * m + 4 * i, endAt(from + i) - skipped)
        i += 1
      }
      System.arraycopy(packed, dataStart + skipped, out, at + 12 * m, bytes)
      new ValueSet(out, m)
    }

  /** Raw bytes of timestamps and values (keys are counted by the partition). */
  def payloadBytes: Long = {
    val n = size
    if (n == 0) 0L else 8L * n + endAt(n - 1)
  }

  /** Bytes of the packed array, spare room included (what the heap holds for it, its header aside). */
  def heldBytes: Long = packed.length.toLong
}

object ValueSet {
  // Sets of up to this many pairs are counted by latestIndex rather than binary searched.
  private val ScanPairs = 16
  private val KeyLengthAt = 8
  private[core] val KeyAt = 16
  // Key bytes compared as two words, as Key.equals does for a key of up to this many bytes.
  private val InlineKey = 16

  private val Sealed = 0x80000000

  // Where the timestamps start for a key of `kl` bytes (-1: no key kept).
  private def timesAtOf(kl: Int): Int = if (kl < 0) KeyAt else KeyAt + ((math.max(kl, InlineKey) + 7) & ~7)

  // An array of `pairs` pairs (count and key set, nothing else written) with room for `capacity` pairs
  // of `valueCapacity` value bytes in all; `key` null keeps no key.
  private def allocate(
      pairs: Int, valueBytes: Int, capacity: Int, valueCapacity: Int, key: Array[Byte]): Array[Byte] = {
    val kl = if (key == null) -1 else key.length
    val a = new Array[Byte](timesAtOf(kl) + 12 * capacity + valueCapacity)
    PackedBytes.putInt(a, 0, pairs)
    PackedBytes.putInt(a, 4, capacity)
    PackedBytes.putInt(a, KeyLengthAt, kl)
    if (key != null) System.arraycopy(key, 0, a, KeyAt, kl)
    a
  }

  /**
   * Whether `packed` (a set's array, as the key table holds it) is `key`'s set: 1 yes, 0 no (another key's:
   * it shares the key's hash), -1 the array keeps no key (ask the stored key object). Reads the array's
   * first line only, and the key's own fields (its bytes too for a key longer than 16 bytes).
   */
  private[core] def keyMatch(packed: Array[Byte], key: Key): Int = {
    val kl = PackedBytes.getInt(packed, KeyLengthAt)
    if (kl < 0) -1
    else if (kl != key.length) 0
    else if (kl <= InlineKey) {
      if (PackedBytes.getLong(packed, KeyAt) == key.head0 && PackedBytes.getLong(packed, KeyAt + 8) == key.head1) 1
      else 0
    } else if (Arrays.equals(packed, KeyAt, KeyAt + kl, key.bytes, 0, kl)) 1
    else 0
  }

  // The published pair count (an acquire read: the pairs below it are written before it).
  private def countOf(packed: Array[Byte]): Int = PackedBytes.getIntAcquire(packed, 0) & ~Sealed

  /**
   * Seals `set`'s array, so its applier appends no more pairs in place (it copies instead); true if the
   * array still holds exactly `set`'s pairs, false if an append got in first (then `set` is not the
   * key's whole set any more and must not replace it). A compaction seals before it replaces a set.
   */
  private[core] def seal(set: ValueSet): Boolean = {
    val a = set.packed
    val n = set.size
    PackedBytes.compareAndSetInt(a, 0, n, n | Sealed) || PackedBytes.getIntAcquire(a, 0) == (n | Sealed)
  }

  val Empty: ValueSet = new ValueSet(allocate(0, 0, 0, 0, null), 0)

  /**
   * Bytes of the packed array of a set of `pairs` pairs holding `valueBytes` value bytes for a key of
   * `keyLength` bytes (its header aside).
   */
  def packedLength(pairs: Int, valueBytes: Long, keyLength: Int): Long = timesAtOf(keyLength) + 12L * pairs + valueBytes

  /**
   * The value of a pair a transaction's delete stored: empty (a value row of a State's value type is
   * never empty: it holds at least its null bitset). Fetches read it as no value at that time.
   */
  val Deleted: Array[Byte] = Array.emptyByteArray

  /** `key`'s set of the given pairs (times ascending, distinct); `key` null: a set that keeps no key. */
  def of(key: Array[Byte], times: Array[Long], values: Array[Array[Byte]]): ValueSet = {
    val b = new Builder(key, Empty, times.length, 0)
    var i = 0
    while (i < times.length) { b.put(times(i), values(i)); i += 1 }
    b.result()
  }

  /**
   * Builds the successor of a set from a chain of updates. Appending at or after the newest pair is
   * the common case (updates arrive above U, and every applied pair is below U): the base set is
   * read in place, the new pairs are kept by reference, and [[result]] writes the packed array once.
   * `extraPairs` and `extraBytes` are sizing hints. `key` is the bytes of the key whose set it builds
   * (kept in the new array, see [[keyMatch]]); null keeps none.
   */
  final class Builder(private var key: Array[Byte], base: ValueSet, extraPairs: Int, extraBytes: Int) {
    // The first `keep` pairs of `from`, then the `added` pairs in times/values.
    private var from = base
    private var keep = base.size
    private var times = new Array[Long](math.max(extraPairs, 1))
    private var values = new Array[Array[Byte]](times.length)
    private var added = 0

    /** Starts again on `key`'s `base`, keeping the arrays (one builder serves many chains in turn). */
    def reset(key: Array[Byte], base: ValueSet): Unit = {
      Arrays.fill(values.asInstanceOf[Array[AnyRef]], 0, added, null)
      this.key = key; from = base; keep = base.size; added = 0
    }

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

    def result(): ValueSet = result(0)

    /**
     * The new set, in a new array unless nothing changed, with room for `sparePairs` more pairs (and as
     * many value bytes as that many of its average value), for later appends in place.
     */
    def result(sparePairs: Int): ValueSet = {
      if (added == 0 && keep == from.size) from
      else {
        val n = keep + added
        val kept = if (keep == 0) 0 else from.endAt(keep - 1)
        var bytes = kept
        var i = 0
        while (i < added) { bytes += values(i).length; i += 1 }
        val capacity = n + sparePairs
        val out = allocate(n, bytes, capacity, bytes + (if (n == 0) 0 else (bytes / n) * sparePairs), key)
        val at = timesAtOf(PackedBytes.getInt(out, KeyLengthAt))
        val ends = at + 8 * capacity
        val data = at + 12 * capacity
        // The kept pairs: timestamps, ends (unchanged, relative to the first value) and values, in place.
        System.arraycopy(from.packed, from.timesAt, out, at, 8 * keep)
        System.arraycopy(from.packed, from.endsStart, out, ends, 4 * keep)
        System.arraycopy(from.packed, from.dataStart, out, data, kept)
        write(out, at, keep, kept, ends, data)
        new ValueSet(out, n)
      }
    }

    // The added pairs into `out` (timestamps from byte `timesAt`) from pair `at` on, the values from byte
    // `end` of its value region.
    private def write(out: Array[Byte], timesAt: Int, at: Int, start: Int, ends: Int, data: Int): Unit = {
      var end = start
      var i = 0
      while (i < added) {
        val v = values(i)
        PackedBytes.putLong(out, timesAt + 8 * (at + i), times(i))
        System.arraycopy(v, 0, out, data + end, v.length)
        end += v.length
        PackedBytes.putInt(out, ends + 4 * (at + i), end)
        i += 1
      }
    }

    /**
     * Appends the added pairs to the base set's own array, past its pairs, and publishes them with a
     * compare-and-set of its count: the set then holds them, for whoever reads its array afresh (the key
     * table keeps pointing at it). Only when every base pair is kept, pairs were added after them, the
     * array has room for them, and `compacts` (whether the key's compaction would drop or change a pair
     * of the grown set, asked with a view of it) says no. False when any of that fails, or a compaction
     * sealed the array meanwhile: then build a new set with [[result]]. Called by the key's applier only.
     */
    def appendInPlace(compacts: ValueSet => Boolean): Boolean = {
      val base = from
      val n = keep + added
      if (added == 0 || (base eq Empty) || keep != base.size || n > base.capacity) false
      else {
        val kept = if (keep == 0) 0 else base.endAt(keep - 1)
        var bytes = kept
        var i = 0
        while (i < added) { bytes += values(i).length; i += 1 }
        if (base.dataStart + bytes > base.packed.length) false
        else {
          // Past the published count: no view of the array reads these bytes.
          write(base.packed, base.timesAt, keep, kept, base.endsStart, base.dataStart)
          !compacts(new ValueSet(base.packed, n)) && PackedBytes.compareAndSetInt(base.packed, 0, keep, n)
        }
      }
    }
  }
}
