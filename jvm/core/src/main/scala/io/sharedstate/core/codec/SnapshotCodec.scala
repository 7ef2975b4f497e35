package io.sharedstate.core.codec

import io.sharedstate.core.{Key, StatePartition, ValueSet}
import java.io.{ByteArrayInputStream, ByteArrayOutputStream, InputStream, OutputStream}
import java.nio.charset.StandardCharsets.US_ASCII
import scala.collection.mutable.ArrayBuffer

/** A decoded partition snapshot: its applied entries and the staged updates still waiting for U. */
final case class PartitionSnapshot(
    state: String,
    partition: Int,
    partitionCount: Int,
    updateProgress: Long,
    entries: IndexedSeq[(Key, ValueSet)],
    staged: IndexedSeq[(Key, Long, Array[Byte])])

/**
 * Versioned binary format of one partition, for the durability layer's snapshots.
 *
 * Version 1: "SSSN", 0x01, state name (int32 length + UTF-8), partition (int32), partition count
 * (int32), update progress U (int64), entry count (int32); per entry: key (int32 length + bytes),
 * pair count (int32), the timestamps (int64 each, ascending), the values (int32 length + bytes each);
 * then the staged count (int32) and per staged update, in arrival order: key, time (int64), value;
 * then the CRC-32 of all of it (int32). Big-endian. Streams, so a large partition is never built in
 * memory twice.
 */
object SnapshotCodec {
  val Version = 1
  private val Magic = "SSSN".getBytes(US_ASCII)

  def write(state: String, partition: StatePartition, partitionCount: Int, updateProgress: Long, out: OutputStream): Unit =
    CodecIO.write(out, Magic, Version) { d =>
      CodecIO.writeString(d, state)
      d.writeInt(partition.id)
      d.writeInt(partitionCount)
      d.writeLong(updateProgress)
      // A consistent list first: the map may change while we write (fetches compact lazily).
      val entries = ArrayBuffer.empty[(Key, ValueSet)]
      partition.foreachEntry((k, v) => entries += (k -> v))
      d.writeInt(entries.size)
      entries.foreach { case (k, set) =>
        CodecIO.writeBytes(d, k.bytes)
        d.writeInt(set.size)
        var i = 0
        while (i < set.size) { d.writeLong(set.timeAt(i)); i += 1 }
        i = 0
        while (i < set.size) { d.writeInt(set.valueLength(i)); d.write(set.packedValues, set.valueOffset(i), set.valueLength(i)); i += 1 }
      }
      val staged = ArrayBuffer.empty[(Key, Long, Array[Byte])]
      partition.foreachStaged((k, t, v) => staged += ((k, t, v)))
      d.writeInt(staged.size)
      staged.foreach { case (k, t, v) => CodecIO.writeBytes(d, k.bytes); d.writeLong(t); CodecIO.writeBytes(d, v) }
    }

  def read(in: InputStream): PartitionSnapshot =
    CodecIO.read(in, Magic, Version, "partition snapshot") { (d, _) =>
      val what = "partition snapshot"
      val state = CodecIO.readString(d, what)
      val partition = d.readInt()
      val partitionCount = d.readInt()
      val u = d.readLong()
      val n = CodecIO.count(d, what)
      val entries = IndexedSeq.newBuilder[(Key, ValueSet)]
      var e = 0
      while (e < n) {
        val key = new Key(CodecIO.readBytes(d, what))
        val pairs = CodecIO.count(d, what)
        val times = Array.fill(pairs)(d.readLong())
        var i = 1
        while (i < pairs) {
          if (times(i) <= times(i - 1)) throw new io.sharedstate.core.SharedStateException(
            s"Corrupt $what: timestamps of an entry are not ascending.")
          i += 1
        }
        val values = Array.fill(pairs)(CodecIO.readBytes(d, what))
        entries += (key -> ValueSet.of(times, values))
        e += 1
      }
      val s = CodecIO.count(d, what)
      val staged = IndexedSeq.fill(s) {
        val key = new Key(CodecIO.readBytes(d, what))
        val time = d.readLong()
        (key, time, CodecIO.readBytes(d, what))
      }
      PartitionSnapshot(state, partition, partitionCount, u, entries.result(), staged)
    }

  def encode(state: String, partition: StatePartition, partitionCount: Int, updateProgress: Long): Array[Byte] = {
    val out = new ByteArrayOutputStream()
    write(state, partition, partitionCount, updateProgress, out)
    out.toByteArray
  }

  def decode(bytes: Array[Byte]): PartitionSnapshot = read(new ByteArrayInputStream(bytes))
}
