package io.sharedstate.core

/**
 * What the engine counts as bytes held: the raw bytes (key, 8 per timestamp, value bytes) plus an
 * estimate of the JVM objects around them on a 64-bit JVM with compressed pointers, so a memory limit
 * set from the heap size means what it says. The JMH footprint run checks the estimate.
 */
object MemoryEstimate {

  /**
   * Key object and its byte array header; two slots of the key table (it keeps at most half of its
   * slots in use), each a 4-byte hash, a key and a set reference; the packed ValueSet array's header.
   * The packed array itself counts at its length (see [[ValueSet]]: count, capacity, 12 bytes per pair
   * slot, value bytes, spare room included).
   */
  val PerKey: Long = 48 + 16 + 2 * (4 + 4 + 4) + 16

  /** A staged update: its slot in four parallel arrays and the value array header. */
  val PerStaged: Long = 4 * 8 + 16

  /** A kept rejected update: its queue node, the RejectedUpdate object, the boxed time and two array headers. */
  val PerRejected: Long = 24 + 48 + 16 + 2 * 16

  def rejected(r: RejectedUpdate): Long =
    PerRejected + lengthOf(r.key) + lengthOf(r.value) + (if (r.reason == null) 0 else r.reason.length)

  private def lengthOf(a: Array[Byte]): Long = if (a == null) 0L else a.length.toLong

  def entry(key: Key, set: ValueSet): Long =
    if (set == null) 0L else key.bytes.length + PerKey + set.heldBytes
}
