package io.sharedstate.core.codec

import io.sharedstate.core.SharedStateException
import java.io.{DataInputStream, DataOutputStream, EOFException, InputStream, OutputStream}
import java.nio.charset.StandardCharsets.UTF_8
import java.util.zip.{CRC32, CheckedInputStream, CheckedOutputStream}

/**
 * The framing both codecs share: a 4-byte magic, a format version byte, the body, then the CRC-32 of
 * everything before it. Integers are big-endian (DataOutput); byte strings are length-prefixed.
 */
private[codec] object CodecIO {
  def write(out: OutputStream, magic: Array[Byte], version: Int)(body: DataOutputStream => Unit): Unit = {
    val checked = new CheckedOutputStream(out, new CRC32)
    val data = new DataOutputStream(checked)
    data.write(magic)
    data.writeByte(version)
    body(data)
    data.flush()
    val crc = checked.getChecksum.getValue.toInt
    val tail = new DataOutputStream(out)
    tail.writeInt(crc)
    tail.flush()
  }

  def read[T](in: InputStream, magic: Array[Byte], supported: Int, what: String)(body: (
          DataInputStream, Int) => T): T = {
    val checked = new CheckedInputStream(in, new CRC32)
    val data = new DataInputStream(checked)
    try {
      val m = new Array[Byte](4)
      data.readFully(m)
      if (!java.util.Arrays.equals(m, magic)) throw new SharedStateException(
        s"Not a sharedstate $what: it starts with ${m.map(b => f"$b%02x").mkString} instead of '${new String(magic, UTF_8)}'.")
      val version = data.readUnsignedByte()
      if (version < 1 || version > supported) throw new SharedStateException(
        s"Unsupported $what format version $version: this engine reads versions 1 to $supported.")
      val result = body(data, version)
      val expected = checked.getChecksum.getValue.toInt
      val stored = new DataInputStream(in).readInt()
      if (stored != expected) throw new SharedStateException(
        s"Corrupt $what: CRC-32 ${Integer.toHexString(stored)} stored, ${Integer.toHexString(expected)} computed.")
      result
    } catch {
      case _: EOFException => throw new SharedStateException(s"Truncated $what: the data ends before the record does.")
    }
  }

  def writeBytes(out: DataOutputStream, b: Array[Byte]): Unit = { out.writeInt(b.length); out.write(b) }

  def readBytes(in: DataInputStream, what: String): Array[Byte] = {
    val n = in.readInt()
    if (n < 0 || n > (1 << 30)) throw new SharedStateException(s"Corrupt $what: a field claims $n bytes.")
    val b = new Array[Byte](n)
    in.readFully(b)
    b
  }

  def writeString(out: DataOutputStream, s: String): Unit = writeBytes(out, s.getBytes(UTF_8))
  def readString(in: DataInputStream, what: String): String = new String(readBytes(in, what), UTF_8)

  def count(in: DataInputStream, what: String): Int = {
    val n = in.readInt()
    if (n < 0) throw new SharedStateException(s"Corrupt $what: negative count $n.")
    n
  }
}
