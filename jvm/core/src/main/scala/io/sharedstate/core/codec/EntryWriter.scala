package io.sharedstate.core.codec

import io.sharedstate.core.{Key, ValueSet}

/**
 * Writes partition entries in the snapshot format (key, pair count, the timestamps, the values; see
 * [[SnapshotCodec]]) as they are handed over one by one. They are held back in groups of
 * [[EntryWriter.Ahead]]: each group is first touched (each key's bytes, each value set's first line),
 * then written. The touches do not depend on each other, so their cache misses overlap instead of
 * stalling the writes one entry at a time (a large partition's entries are all cold).
 */
private[codec] final class EntryWriter(out: BigEndianBlocks) {
  import EntryWriter.Ahead
  private val keys = new Array[Key](Ahead)
  private val sets = new Array[ValueSet](Ahead)
  private var held = 0
  private var written = 0

  /** Entries handed over so far. */
  def count: Int = written + held

  def add(key: Key, set: ValueSet): Unit = {
    keys(held) = key
    sets(held) = set
    held += 1
    if (held == Ahead) flush()
  }

  /** Writes the entries held back; call before writing anything else to `out`. */
  def flush(): Unit = {
    var touched = 0L
    var i = 0
    while (i < held) { touched += keys(i).bytes.length + sets(i).size; i += 1 }
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

  private def write(k: Key, set: ValueSet): Unit = {
    out.putBytes(k.bytes)
    val n = set.size
    out.putInt(n)
    var j = 0
    while (j < n) { out.putLong(set.timeAt(j)); j += 1 }
    val packed = set.packedValues
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
  // Entries touched ahead of writing them: enough misses in flight, still in L1/L2 when written.
  val Ahead = 64
}
