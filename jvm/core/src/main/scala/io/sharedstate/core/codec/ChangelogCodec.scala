package io.sharedstate.core.codec

import io.sharedstate.core.UpdateBatch
import java.io.{ByteArrayInputStream, ByteArrayOutputStream, InputStream, OutputStream}
import java.nio.charset.StandardCharsets.US_ASCII

/** One changelog record: the updates one task of a writer staged for an epoch. */
final case class ChangelogRecord(state: String, writer: String, epoch: Long, task: Int, batch: UpdateBatch)

/**
 * Versioned binary format of staged updates, for the durability layer's changelog.
 *
 * Version 1: "SSCL", 0x01, state name, writer (int length + UTF-8 each), epoch (int64), task (int32),
 * update count (int32), then per update: key (int32 length + bytes), time (int64), value (int32
 * length + bytes); then the CRC-32 of all of it (int32). Big-endian. Rejected rows are not logged:
 * they go to the late-updates table.
 */
object ChangelogCodec {
  val Version = 1
  private val Magic = "SSCL".getBytes(US_ASCII)

  def write(record: ChangelogRecord, out: OutputStream): Unit =
    CodecIO.write(out, Magic, Version) { d =>
      CodecIO.writeString(d, record.state)
      CodecIO.writeString(d, record.writer)
      d.writeLong(record.epoch)
      d.writeInt(record.task)
      val b = record.batch
      d.writeInt(b.size)
      var i = 0
      while (i < b.size) {
        CodecIO.writeBytes(d, b.keyAt(i))
        d.writeLong(b.timeAt(i))
        CodecIO.writeBytes(d, b.valueAt(i))
        i += 1
      }
    }

  def read(in: InputStream): ChangelogRecord =
    CodecIO.read(in, Magic, Version, "changelog record") { (d, _) =>
      val state = CodecIO.readString(d, "changelog record")
      val writer = CodecIO.readString(d, "changelog record")
      val epoch = d.readLong()
      val task = d.readInt()
      val n = CodecIO.count(d, "changelog record")
      val batch = new UpdateBatch
      var i = 0
      while (i < n) {
        val key = CodecIO.readBytes(d, "changelog record")
        val time = d.readLong()
        batch.add(key, time, CodecIO.readBytes(d, "changelog record"))
        i += 1
      }
      ChangelogRecord(state, writer, epoch, task, batch)
    }

  def encode(record: ChangelogRecord): Array[Byte] = {
    val out = new ByteArrayOutputStream()
    write(record, out)
    out.toByteArray
  }

  def decode(bytes: Array[Byte]): ChangelogRecord = read(new ByteArrayInputStream(bytes))
}
