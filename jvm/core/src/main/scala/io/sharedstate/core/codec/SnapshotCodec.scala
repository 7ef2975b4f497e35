package io.sharedstate.core.codec

import io.sharedstate.core.{Key, StatePartition, ValueSet}
import java.io.{InputStream, OutputStream}
import java.nio.charset.StandardCharsets.{US_ASCII, UTF_8}
import scala.collection.mutable.ArrayBuffer

/**
 * A decoded partition snapshot: its entries and the staged updates still waiting for U. `delta`: the
 * entries are only the keys changed since the previous snapshot of a chain (each replaces that key's
 * whole entry, so a compaction that trimmed a key's history is carried too), and the staged updates
 * replace the previous link's; a full snapshot (`delta` = false) holds every entry.
 */
final case class PartitionSnapshot(
    state: String,
    partition: Int,
    partitionCount: Int,
    updateProgress: Long,
    entries: IndexedSeq[(Key, ValueSet)],
    staged: IndexedSeq[(Key, Long, Array[Byte])],
    delta: Boolean = false)

/**
 * What a snapshot of one partition holds, captured at a commit boundary under the commit lock:
 * references to its entries' ValueSets (immutable, so no copy is needed and encoding runs after the
 * lock is released) and a copy of its staged updates. `delta`: only the entries changed since the
 * previous capture; `changedKeys`: the keys taken from the partition's change tracking (null when
 * not tracking), handed back with [[io.sharedstate.core.State.returnChanged]] if the snapshot is not written.
 * `captureNanos`: how long taking it held the lock (what a snapshot costs the writers).
 */
final class PartitionCapture(val state: String, val partition: Int, val partitionCount: Int, val updateProgress: Long,
    val delta: Boolean, val entries: Array[(Key, ValueSet)], val staged: Array[(Key, Long, Array[Byte])],
    val changedKeys: java.util.Set[Key], val captureNanos: Long = 0L)

object PartitionCapture {

  /**
   * Captures `partition` (call under the State's commit lock). `startChain`: takes its changed keys
   * (the next delta is relative to this capture); `delta` (implies it) keeps only those keys' entries.
   */
  def of(state: String, partition: StatePartition, partitionCount: Int, updateProgress: Long, delta: Boolean,
      startChain: Boolean = false): PartitionCapture = {
    val started = System.nanoTime()
    val changed = if (delta || startChain) partition.takeChangedKeys() else null
    if ((delta || startChain) && changed == null) throw new IllegalStateException(
      s"State '$state' partition ${partition.id} does not track changes: no snapshot chain can be taken")
    val entries = new ArrayBuffer[(Key, ValueSet)](if (delta) changed.size else partition.keyCount)
    if (delta) changed.forEach { k =>
      val set = partition.get(k) // entries are never removed: a changed key has one
      if (set != null) entries += (k -> set)
    }
    // A consistent list first: the map may change while we write (fetches compact lazily).
    else partition.foreachEntry((k, v) => entries += (k -> v))
    val staged = ArrayBuffer.empty[(Key, Long, Array[Byte])]
    partition.foreachStaged((k, t, v) => staged += ((k, t, v)))
    new PartitionCapture(state, partition.id, partitionCount, updateProgress, delta, entries.toArray, staged.toArray,
      changed, System.nanoTime() - started)
  }
}

/**
 * Versioned binary format of one partition, for the durability layer's snapshots.
 *
 * Version 1 (a full snapshot): "SSSN", 0x01, state name (int32 length + UTF-8), partition (int32), partition count
 * (int32), update progress U (int64), entry count (int32); per entry: key (int32 length + bytes),
 * pair count (int32), the timestamps (int64 each, ascending), the values (int32 length + bytes each);
 * then the staged count (int32) and per staged update, in arrival order: key, time (int64), value;
 * then the CRC-32 of all of it (int32). Big-endian. Encoded into blocks that are never copied (see
 * [[BigEndianBlocks]]); decoded from an array or a stream.
 *
 * Version 2: as version 1 with a kind byte after U (0 full, 1 delta: see [[PartitionSnapshot]]).
 * Full snapshots are still written as version 1, so older engines read them; deltas as version 2.
 */
object SnapshotCodec {
  val Version = 2
  private val Full = 0
  private val Delta = 1
  private val Magic = "SSSN".getBytes(US_ASCII)

  def write(
      state: String, partition: StatePartition, partitionCount: Int, updateProgress: Long, out: OutputStream): Unit =
    write(PartitionCapture.of(state, partition, partitionCount, updateProgress, delta = false), out)

  def write(c: PartitionCapture, out: OutputStream): Unit = out.write(encode(c))

  def read(in: InputStream): PartitionSnapshot =
    CodecIO.read(in, Magic, Version, "partition snapshot")((d, v) => readBody(d, v, new Collected))

  /** What a reader hands each part of a snapshot to, in order: the header, each entry, each staged update. */
  private[codec] trait Sink[T] {
    def header(state: String, partition: Int, partitionCount: Int, updateProgress: Long, delta: Boolean,
        entries: Int): Unit
    def entry(key: Key, set: ValueSet): Unit
    def staged(key: Key, time: Long, value: Array[Byte]): Unit
    def result(): T
  }

  // The decoded snapshot as a value (what `read` and `decode` return).
  private final class Collected extends Sink[PartitionSnapshot] {
    private var head: PartitionSnapshot = _
    private val entries = IndexedSeq.newBuilder[(Key, ValueSet)]
    private val stagedUpdates = IndexedSeq.newBuilder[(Key, Long, Array[Byte])]
    def header(state: String, partition: Int, partitionCount: Int, u: Long, delta: Boolean, n: Int): Unit = {
      head = PartitionSnapshot(state, partition, partitionCount, u, IndexedSeq.empty, IndexedSeq.empty, delta)
      entries.sizeHint(n)
    }
    def entry(key: Key, set: ValueSet): Unit = entries += (key -> set)
    def staged(key: Key, time: Long, value: Array[Byte]): Unit = stagedUpdates += ((key, time, value))
    def result(): PartitionSnapshot = head.copy(entries = entries.result(), staged = stagedUpdates.result())
  }

  private def readBody[T](d: java.io.DataInputStream, version: Int, sink: Sink[T]): T = {
    val what = "partition snapshot"
    val state = CodecIO.readString(d, what)
    val partition = d.readInt()
    val partitionCount = d.readInt()
    val u = d.readLong()
    val delta = version >= 2 && (d.readUnsignedByte() match {
      case Full => false
      case Delta => true
      case other => throw new io.sharedstate.core.SharedStateException(s"Corrupt $what: unknown kind $other.")
    })
    val n = CodecIO.count(d, what)
    sink.header(state, partition, partitionCount, u, delta, n)
    var e = 0
    while (e < n) {
      val key = new Key(CodecIO.readBytes(d, what))
      val pairs = CodecIO.count(d, what)
      val times = new Array[Long](pairs)
      var i = 0
      while (i < pairs) {
        times(i) = d.readLong()
        if (i > 0 && times(i) <= times(i - 1)) throw new io.sharedstate.core.SharedStateException(
          s"Corrupt $what: timestamps of an entry are not ascending.")
        i += 1
      }
      val values = new Array[Array[Byte]](pairs)
      i = 0
      while (i < pairs) { values(i) = CodecIO.readBytes(d, what); i += 1 }
      sink.entry(key, ValueSet.of(key.bytes, times, values))
      e += 1
    }
    val s = CodecIO.count(d, what)
    var j = 0
    while (j < s) {
      val key = new Key(CodecIO.readBytes(d, what))
      val time = d.readLong()
      sink.staged(key, time, CodecIO.readBytes(d, what))
      j += 1
    }
    sink.result()
  }

  /** `bytes` (one snapshot) read into `sink` as it is decoded; the checksum is verified before anything is handed over. */
  private[codec] def readInto[T](bytes: Array[Byte], sink: Sink[T]): T = {
    CodecIO.verify(bytes, Magic, Version, "partition snapshot")
    CodecIO.readArray(bytes, Magic, Version, "partition snapshot")((d, v) => readBody(d, v, sink))
  }

  def encode(state: String, partition: StatePartition, partitionCount: Int, updateProgress: Long): Array[Byte] =
    encode(PartitionCapture.of(state, partition, partitionCount, updateProgress, delta = false))

  def encode(c: PartitionCapture): Array[Byte] = BigEndianBlocks.concat(encodeBlocks(c))

  /**
   * [[encode]] as consecutive blocks of at most `maxBlock` bytes (their concatenation is the
   * encoding): nothing is copied into one array, the durable layer stores the blocks as they are.
   */
  def encodeBlocks(c: PartitionCapture, maxBlock: Int = DefaultMaxBlock): Array[Array[Byte]] = {
    val w = new BigEndianBlocks(maxBlock)
    val es = c.entries
    w.put(header(c.state, c.partition, c.partitionCount, c.updateProgress, c.delta, es.length))
    val entries = new EntryWriter(w)
    es.foreach { case (k, set) => entries.add(k, set) }
    entries.flush()
    writeStaged(w, c.staged)
    w.sealedWithCrc()
  }

  /** What precedes the entries: magic, version, state, partition, partition count, U, kind (a delta), entry count. */
  private[codec] def header(state: String, partition: Int, partitionCount: Int, updateProgress: Long, delta: Boolean,
      entries: Int): Array[Byte] = {
    val name = state.getBytes(UTF_8)
    val h = java.nio.ByteBuffer.allocate(Magic.length + 1 + 4 + name.length + 4 + 4 + 8 + (if (delta) 1 else 0) + 4)
    h.put(Magic).put((if (delta) 2 else 1).toByte).putInt(name.length).put(name).putInt(partition)
      .putInt(partitionCount).putLong(updateProgress)
    if (delta) h.put(Delta.toByte)
    h.putInt(entries).array()
  }

  /** The staged section: its count, then per update in arrival order its key, time and value. */
  private[codec] def writeStaged(w: BigEndianBlocks, staged: Array[(Key, Long, Array[Byte])]): Unit = {
    w.putInt(staged.length)
    staged.foreach { case (k, t, v) => w.putBytes(k.bytes); w.putLong(t); w.putBytes(v) }
  }

  /** The largest block [[encodeBlocks]] writes by default (the snapshots table's chunk size). */
  val DefaultMaxBlock: Int = 4 << 20

  def decode(bytes: Array[Byte]): PartitionSnapshot =
    CodecIO.readArray(bytes, Magic, Version, "partition snapshot")((d, v) => readBody(d, v, new Collected))
}
