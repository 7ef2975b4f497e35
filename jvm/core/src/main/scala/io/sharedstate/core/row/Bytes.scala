package io.sharedstate.core.row

/** Little-endian reads and writes on byte arrays: the byte order Spark's Platform uses on x86 and ARM. */
object Bytes {
  def getLong(b: Array[Byte], at: Int): Long =
    (b(at) & 0xffL) | ((b(at + 1) & 0xffL) << 8) | ((b(at + 2) & 0xffL) << 16) | ((b(at + 3) & 0xffL) << 24) |
      ((b(at + 4) & 0xffL) << 32) | ((b(at + 5) & 0xffL) << 40) | ((b(at + 6) & 0xffL) << 48) | ((b(
        at + 7) & 0xffL) << 56)

  def getInt(b: Array[Byte], at: Int): Int =
    (b(at) & 0xff) | ((b(at + 1) & 0xff) << 8) | ((b(at + 2) & 0xff) << 16) | ((b(at + 3) & 0xff) << 24)

  def putLong(b: Array[Byte], at: Int, v: Long): Unit = {
    var i = 0
    while (i < 8) { b(at + i) = (v >>> (8 * i)).toByte; i += 1 }
  }

  def putInt(b: Array[Byte], at: Int, v: Int): Unit = {
    var i = 0
    while (i < 4) { b(at + i) = (v >>> (8 * i)).toByte; i += 1 }
  }

  /** Bytes rounded up to whole 8-byte words, as Spark aligns variable-length data. */
  def roundToWord(n: Int): Int = (n + 7) & ~7

  /** Bytes of the null bitset for `n` fields or elements: one 8-byte word per 64. */
  def bitsetBytes(n: Int): Int = ((n + 63) / 64) * 8
}
