package io.sharedstate.core.codec

import io.sharedstate.core.{Key, ValueSet}

/**
 * Writes partition entries in the snapshot format (key, pair count, the timestamps, the values; see
 * [[SnapshotCodec]]) as they are handed over one by one. They are held back in groups of
 * [[EntryWriter.Ahead]]: each group is first touched (each value set's first line and its newest time,
 * the key object only for a set that does not keep its key), then written; a stored group's first
 * lines are touched in a loop of their own before that. The touches do not depend on
 * each other, so their cache misses overlap instead of stalling the writes one entry at a time (a large
 * partition's entries are all cold). Entries handed over as the key table stores them ([[addStored]])
 * are not read before they are touched: a walk of the table then waits for no entry.
 */
private[codec] final class EntryWriter(out: BigEndianBlocks) {
  import EntryWriter.Ahead
  private val keys = new Array[Key](Ahead)
  private val sets = new Array[ValueSet](Ahead)
  // Per entry of a stored group, the pair count read when it was touched (the pairs it is written with).
  private val counts = new Array[Int](Ahead)
  private var held = 0
  private var written = 0

  /** Entries handed over so far. */
  def count: Int = written + held

  def add(key: Key, set: ValueSet): Unit = {
    keys(held) = key
    sets(held) = set
    hold()
  }

  /**
   * A group of at most [[EntryWriter.Ahead]] entries as the key table holds them (see
   * [[io.sharedstate.core.StatePartition.foreachStored]]: entry j is the key object `refs(2j)` and the packed
   * set `refs(2j + 1)`), written at once with the pairs each array holds now.
   */
  def addStored(refs: Array[AnyRef], n: Int): Unit = {
    require(n <= Ahead, s"a group of at most $Ahead entries, got $n")
    flush()
    // First the sets' headers alone (a type check and a length read the array's first line): a loop this
    // small keeps many misses in flight, where the view loop below, heavier, kept two or three (in
    // SnapshotPassBenchmark at 2.5M keys a pass took 1.4x as long without it).
    var headers = 0L
    var i = 0
    while (i < n) { headers += refs(2 * i + 1).asInstanceOf[Array[Byte]].length; i += 1 }
    out.readAhead += headers
    // Views made twice rather than kept: a view that stays in an array is garbage of 10M objects at 10M
    // keys (young pauses of hundreds of ms beside a large old generation); one used where it is made is not.
    var touched = 0L
    var j = 0
    while (j < n) {
      val set = new ValueSet(refs(2 * j + 1).asInstanceOf[Array[Byte]])
      counts(j) = set.size
      touched += touch(set, refs(2 * j))
      j += 1
    }
    out.readAhead += touched
    j = 0
    while (j < n) {
      write(refs(2 * j), new ValueSet(refs(2 * j + 1).asInstanceOf[Array[Byte]], counts(j)))
      j += 1
    }
    written += n
  }

  private def hold(): Unit = {
    held += 1
    if (held == Ahead) flush()
  }

  /** Writes the entries held back; call before writing anything else to `out`. */
  def flush(): Unit = {
    var touched = 0L
    var i = 0
    while (i < held) { touched += touch(sets(i), keys(i)); i += 1 }
    out.readAhead += touched
    i = 0
    while (i < held) {
      write(keys(i), sets(i))
      keys(i) = null
      sets(i) = null
      i += 1
    }
    written += held
    held = 0
  }

  // Reads the lines writing the entry starts and ends on: the set's first line (its count and key),
  // its newest time and its newest value's last byte (a set of a pair or two spans two lines, which
  // these are); the key object only when the set does not keep its key.
  private def touch(set: ValueSet, key: AnyRef): Long = {
    val n = set.size
    (if (n > 0) n + set.timeAt(n - 1) + set.packedValues(set.valueOffset(n - 1) + set.valueLength(n - 1) - 1)
     else 0L) + (if (set.keptKeyLength < 0) key.asInstanceOf[Key].bytes.length else 0)
  }

  private def write(k: AnyRef, set: ValueSet): Unit = {
    val packed = set.packedValues
    val kl = set.keptKeyLength
    if (kl >= 0) {
      out.putInt(kl)
      out.put(packed, ValueSet.KeyAt, kl)
    } else out.putBytes(k.asInstanceOf[Key].bytes)
    val n = set.size
    out.putInt(n)
    var j = 0
    while (j < n) { out.putLong(set.timeAt(j)); j += 1 }
    j = 0
    while (j < n) {
      val len = set.valueLength(j)
      out.putInt(len)
      out.put(packed, set.valueOffset(j), len)
      j += 1
    }
  }
}

private[codec] object EntryWriter {
  // Entries touched ahead of writing them: enough misses in flight, still in L1 when written.
  // (SnapshotPassBenchmark at 2.5M keys: 32 about 1.2x as fast as 64 or 256; 16 between.)
  val Ahead = 32
}
