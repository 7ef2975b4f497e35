package io.sharedstate.core.codec

import io.sharedstate.core.SharedStateException
import java.io.{DataInputStream, EOFException, InputStream}
import java.nio.charset.StandardCharsets.UTF_8
import java.util.zip.{CRC32, CheckedInputStream}

/**
 * Reads records framed as a 4-byte magic, a format version byte, the body, then the CRC-32 of
 * everything before it (SnapshotCodec writes them with [[BigEndianBlocks]]). Integers are big-endian
 * (DataOutput); byte strings are length-prefixed.
 */
private[codec] object CodecIO {
  def read[T](in: InputStream, magic: Array[Byte], supported: Int, what: String)(body: (
          DataInputStream, Int) => T): T = {
    val checked = new CheckedInputStream(in, new CRC32)
    readChecked(new DataInputStream(checked), magic, supported, what, body,
      () => checked.getChecksum.getValue.toInt, () => new DataInputStream(in).readInt())
  }

  /** [[read]] of a record held in `bytes` (from its start): no per-byte checksum, no stream locks. */
  def readArray[T](bytes: Array[Byte], magic: Array[Byte], supported: Int, what: String)(body: (
          DataInputStream, Int) => T): T = {
    val in = new ArrayInput(bytes)
    val data = new DataInputStream(in)
    readChecked(data, magic, supported, what, body,
      () => { val c = new CRC32; c.update(bytes, 0, in.position); c.getValue.toInt },
      () => data.readInt())
  }

  /**
   * Checks that `bytes` hold one whole record (its magic, a supported version, its CRC-32 trailer
   * matching what precedes it) before a reader hands any of it on; fails as [[readArray]] does.
   */
  def verify(bytes: Array[Byte], magic: Array[Byte], supported: Int, what: String): Unit = {
    if (bytes.length < magic.length + 1 + 4) throw new SharedStateException(
      s"Truncated $what: the data ends before the record does.")
    if (!java.util.Arrays.equals(bytes, 0, magic.length, magic, 0, magic.length)) throw new SharedStateException(
      s"Not a sharedstate $what: it starts with ${bytes.take(4).map(b => f"$b%02x").mkString} instead of '${new String(magic, UTF_8)}'.")
    val version = bytes(magic.length) & 0xff
    if (version < 1 || version > supported) throw new SharedStateException(
      s"Unsupported $what format version $version: this engine reads versions 1 to $supported.")
    val end = bytes.length - 4
    val c = new CRC32
    c.update(bytes, 0, end)
    val stored = ((bytes(end) & 0xff) << 24) | ((bytes(end + 1) & 0xff) << 16) | ((bytes(end + 2) & 0xff) << 8) |
      (bytes(end + 3) & 0xff)
    if (stored != c.getValue.toInt) throw new SharedStateException(
      s"Corrupt $what: CRC-32 ${Integer.toHexString(stored)} stored, ${Integer.toHexString(c.getValue.toInt)} computed.")
  }

  private def readChecked[T](data: DataInputStream, magic: Array[Byte], supported: Int, what: String,
      body: (DataInputStream, Int) => T, checksum: () => Int, storedChecksum: () => Int): T =
    try {
      val m = new Array[Byte](4)
      data.readFully(m)
      if (!java.util.Arrays.equals(m, magic)) throw new SharedStateException(
        s"Not a sharedstate $what: it starts with ${m.map(b => f"$b%02x").mkString} instead of '${new String(magic, UTF_8)}'.")
      val version = data.readUnsignedByte()
      if (version < 1 || version > supported) throw new SharedStateException(
        s"Unsupported $what format version $version: this engine reads versions 1 to $supported.")
      val result = body(data, version)
      val expected = checksum()
      val stored = storedChecksum()
      if (stored != expected) throw new SharedStateException(
        s"Corrupt $what: CRC-32 ${Integer.toHexString(stored)} stored, ${Integer.toHexString(expected)} computed.")
      result
    } catch {
      case _: EOFException => throw new SharedStateException(s"Truncated $what: the data ends before the record does.")
    }

  // An unsynchronized InputStream over an array that tells how far it was read.
  private final class ArrayInput(bytes: Array[Byte]) extends InputStream {
    private var pos = 0
    def position: Int = pos
    override def read(): Int = if (pos < bytes.length) { val b = bytes(pos) & 0xff; pos += 1; b }
    else -1
    override def read(b: Array[Byte], off: Int, len: Int): Int =
      if (len == 0) 0
      else if (pos >= bytes.length) -1
      else { val k = math.min(len, bytes.length - pos); System.arraycopy(bytes, pos, b, off, k); pos += k; k }
    override def available(): Int = bytes.length - pos
  }

  def readBytes(in: DataInputStream, what: String): Array[Byte] = {
    val n = in.readInt()
    if (n < 0 || n > (1 << 30)) throw new SharedStateException(s"Corrupt $what: a field claims $n bytes.")
    val b = new Array[Byte](n)
    in.readFully(b)
    b
  }

  def readString(in: DataInputStream, what: String): String = new String(readBytes(in, what), UTF_8)

  def count(in: DataInputStream, what: String): Int = {
    val n = in.readInt()
    if (n < 0) throw new SharedStateException(s"Corrupt $what: negative count $n.")
    n
  }
}
