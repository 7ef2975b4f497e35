package io.sharedstate.core.codec

import java.nio.{ByteBuffer, ByteOrder}
import scala.collection.mutable.ArrayBuffer

/**
 * A byte sequence written big-endian (DataOutput's byte order) into blocks that are never copied:
 * each block is filled to the end before the next is allocated, the first ones small (a small
 * snapshot stays small), then doubling up to `maxBlock`. Where DataOutputStream over a growable
 * array makes a virtual call per byte and copies the whole array at each growth and once more at the
 * end (at 1M entries the copies into fresh memory were a third of the encoding), a field here is one
 * bounds check and one store. [[sealedWithCrc]] appends the CRC-32 of everything before it, computed
 * when sealing (one sequential pass), so a caller may put a header in front that it only knows at
 * the end ([[sealedAfter]]).
 */
private[codec] final class BigEndianBlocks(maxBlock: Int) {
  require(maxBlock >= 16, s"blocks of at least 16 bytes, got $maxBlock")
  private val full = ArrayBuffer.empty[Array[Byte]]
  private var buf = new Array[Byte](math.min(maxBlock, 1 << 16))
  private var view = ByteBuffer.wrap(buf).order(ByteOrder.BIG_ENDIAN)
  private var n = 0
  private var total = 0L

  /** Bytes written so far. */
  def length: Long = total + n

  /**
   * Where a caller that reads data ahead of writing it (to overlap its cache misses) sums what it
   * read: a load whose result goes nowhere is dropped by the JIT, one that reaches a field is not.
   */
  var readAhead: Long = 0L

  def putByte(b: Int): Unit = { if (n == buf.length) next(); buf(n) = b.toByte; n += 1 }

  def putInt(v: Int): Unit =
    if (buf.length - n >= 4) { view.putInt(n, v); n += 4 }
    else { putByte(v >>> 24); putByte(v >>> 16); putByte(v >>> 8); putByte(v) }

  def putLong(v: Long): Unit =
    if (buf.length - n >= 8) { view.putLong(n, v); n += 8 }
    else { putInt((v >>> 32).toInt); putInt(v.toInt) }

  def put(b: Array[Byte], off: Int, len: Int): Unit = {
    var from = off
    var left = len
    while (left > 0) {
      if (n == buf.length) next()
      val k = math.min(left, buf.length - n)
      System.arraycopy(b, from, buf, n, k)
      n += k
      from += k
      left -= k
    }
  }

  def put(b: Array[Byte]): Unit = put(b, 0, b.length)

  /** An int32 length, then the bytes (what CodecIO.readBytes reads). */
  def putBytes(b: Array[Byte]): Unit = { putInt(b.length); put(b) }

  /** Appends the CRC-32 of everything written so far (CodecIO's trailer); the blocks, in order, hold it all. */
  def sealedWithCrc(): Array[Array[Byte]] = seal(null)

  /**
   * `header`, then the blocks written here, with the CRC-32 of both appended: the blocks in order
   * are `header` followed by this writer's bytes and the trailer.
   */
  def sealedAfter(header: Array[Byte]): Array[Array[Byte]] = header +: seal(header)

  private def seal(header: Array[Byte]): Array[Array[Byte]] = {
    val crc = new java.util.zip.CRC32
    if (header != null) crc.update(header)
    full.foreach(b => crc.update(b))
    crc.update(buf, 0, n)
    val sum = crc.getValue.toInt
    // The trailer goes past the checksummed bytes.
    val tail = Array((sum >>> 24).toByte, (sum >>> 16).toByte, (sum >>> 8).toByte, sum.toByte)
    var t = 0
    while (t < 4) {
      if (n == buf.length) { full += buf; total += n; buf = new Array[Byte](4 - t); n = 0 }
      buf(n) = tail(t); n += 1; t += 1
    }
    val last = if (n == buf.length) buf else java.util.Arrays.copyOf(buf, n)
    (full :+ last).toArray
  }

  // The current block is full: kept; the next one is up to twice its size.
  private def next(): Unit = {
    full += buf
    total += n
    buf = new Array[Byte](math.min(maxBlock.toLong, buf.length * 2L).toInt)
    view = ByteBuffer.wrap(buf).order(ByteOrder.BIG_ENDIAN)
    n = 0
  }
}

private[codec] object BigEndianBlocks {

  /** The blocks as one array (one copy: for callers that need the snapshot whole). */
  def concat(blocks: Array[Array[Byte]]): Array[Byte] =
    if (blocks.length == 1) blocks(0)
    else {
      val out = new Array[Byte](math.toIntExact(blocks.iterator.map(_.length.toLong).sum))
      var at = 0
      blocks.foreach { b => System.arraycopy(b, 0, out, at, b.length); at += b.length }
      out
    }
}
