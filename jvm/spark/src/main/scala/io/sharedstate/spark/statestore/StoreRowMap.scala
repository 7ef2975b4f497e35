package io.sharedstate.spark.statestore

import java.util.concurrent.ConcurrentHashMap

import org.apache.spark.sql.catalyst.expressions.{BoundReference, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.Platform
import org.apache.spark.unsafe.array.ByteArrayMethods

/**
 * The one live map of a loaded store, packed: no objects per entry. Each put appends a record
 * (`keyLength, valueLength (-1: removed), key bytes, value bytes`, the rows' UnsafeRow bytes) to
 * the tail of large byte-array pages, and an open-addressing index (linear probing) of longs,
 * `hash << 32 | address`, finds a key's latest record. A record is never changed once written:
 * a put or a remove appends a new one and the old one becomes garbage, which a compaction (at
 * commit, when garbage passes [[StoreRowMap.CompactGarbageRatio]] of the live bytes) drops by
 * copying the live records into new pages. So a row handed out points into a page and stays valid
 * as long as it is held, and a reader that took an index copy (the maintenance snapshot,
 * [[frozen]]) reads the version it copied while a task updates the map.
 *
 * A batch (a store updating the map, [[beginBatch]] to [[endBatch]] or [[rollback]]) keeps an undo
 * log of addresses: for each key its first change touched, the index entry it had before. A key's
 * records are appended in address order, so a key whose current record is at or after the batch's
 * start address was already touched (a removal appends a tombstone record for that reason). The
 * undo log's keys are the version's changelog.
 *
 * One thread updates the map (the task's store); removing keys while iterating is allowed (Spark's
 * watermark eviction does it). With a prefix-key encoder (session windows) a second, object-based
 * index maps key prefixes to their keys. `version` is the committed version the map holds when no
 * store is updating it.
 */
private[sharedstate] final class StoreRowMap(
    keySchema: StructType,
    valueFields: Int,
    numColsPrefixKey: Int,
    @volatile var version: Long,
    maxPageBytes: Int = StoreRowMap.MaxPageBytes,
    compactMinGarbageBytes: Long = StoreRowMap.CompactMinGarbageBytes) {
  import StoreRowMap._

  require(maxPageBytes >= 16 && maxPageBytes % 8 == 0 && maxPageBytes <= (1 << OffsetBits + 3),
    s"maxPageBytes $maxPageBytes: a multiple of 8 between 16 and ${1 << OffsetBits + 3}")

  private val keyFields = keySchema.length

  // The pages and index of the current compaction generation; a compaction starts a new one.
  @volatile private var gen = new Generation(InitialSlots, FirstPageBytes.min(maxPageBytes), maxPageBytes)
  @volatile private var liveKeys = 0L
  private var liveBytes = 0L // bytes of the live (non-tombstone) records the index points at
  private var appendedBytes = 0L // bytes of every record of the generation, garbage included

  // The batch: undo log of (first new index entry, previous index entry or Empty) per touched key.
  private var inBatch = false
  private var batchStart = 0L
  private var undoNew = new Array[Long](16)
  private var undoOld = new Array[Long](16)
  private var undoCount = 0

  private val prefixIndex: ConcurrentHashMap[UnsafeRow, java.util.Set[UnsafeRow]] =
    if (numColsPrefixKey > 0) new ConcurrentHashMap() else null
  @volatile private var prefixKeyBytes = 0L

  // Not thread-safe (the projection reuses its output row): one per thread.
  private val prefixProjection: ThreadLocal[UnsafeProjection] = ThreadLocal.withInitial { () =>
    UnsafeProjection.create(keySchema.fields.take(numColsPrefixKey).toSeq.zipWithIndex.map { case (f, i) =>
      BoundReference(i, f.dataType, f.nullable)
    })
  }

  def size: Long = liveKeys

  /** Heap held: the pages and the index, plus the prefix index's objects when there is one. */
  def estimatedBytes: Long = {
    val g = gen
    val prefix = if (prefixIndex == null) 0L else prefixKeyBytes + liveKeys * PrefixEntryOverheadBytes
    g.allocatedBytes + g.index.length * 8L + prefix
  }

  def get(key: UnsafeRow): UnsafeRow = {
    val g = gen
    val s = g.index(g.find(key.getBaseObject, key.getBaseOffset, key.getSizeInBytes, key.hashCode))
    if (s == Empty || g.isTombstone(s)) null else g.valueRow(s, valueFields)
  }

  /** Copies the rows' bytes in (the caller may reuse its rows). */
  def put(key: UnsafeRow, value: UnsafeRow): Unit = {
    if (value == null) throw new IllegalArgumentException("put of a null value")
    write(key, value)
  }

  /** Removes the key if present. */
  def remove(key: UnsafeRow): Unit = write(key, null)

  private def write(key: UnsafeRow, value: UnsafeRow): Unit = {
    var g = gen
    if (g.slotsUsed + 1 > g.index.length * MaxLoad) { grow(g); g = gen }
    val h = key.hashCode
    val i = g.find(key.getBaseObject, key.getBaseOffset, key.getSizeInBytes, h)
    val old = g.index(i)
    val oldLive = old != Empty && !g.isTombstone(old)
    if (value == null && !oldLive) return
    if (value == null && !inBatch) {
      // Loading from files: no undo log, so the key's slot can go at once.
      g.deleteSlot(i)
    } else {
      val s = (h.toLong << 32) | g.append(key, value)
      appendedBytes += g.recordBytes(s)
      if (inBatch && (old == Empty || address(old) < batchStart)) logUndo(s, old)
      g.index(i) = s
      if (old == Empty) g.slotsUsed += 1
      if (value != null) liveBytes += g.recordBytes(s)
    }
    if (oldLive) liveBytes -= g.recordBytes(old)
    if (value != null && !oldLive) { liveKeys += 1; prefixAdd(key) }
    else if (value == null) { liveKeys -= 1; prefixRemove(key) }
  }

  /** The live entries, fresh rows per entry (pointing into the pages). Weakly consistent, as a ConcurrentHashMap's. */
  def entries: Iterator[(UnsafeRow, UnsafeRow)] = {
    val g = gen
    entriesOf(g, g.index)
  }

  /** The keys that start with `prefix` (a row of the first `numColsPrefixKey` key columns). */
  def keysWithPrefix(prefix: UnsafeRow): java.util.Iterator[UnsafeRow] = {
    if (prefixIndex == null) throw new IllegalStateException("prefix scan on a store without a prefix key encoder")
    val keys = prefixIndex.get(prefix)
    if (keys == null) java.util.Collections.emptyIterator() else keys.iterator
  }

  /** An immutable view of the map as it is now (the index copied, the pages shared: they only grow). */
  def frozen(): StoreRowMap.Frozen = {
    val g = gen
    new Frozen(entriesOf(g, g.index.clone()))
  }

  // ---- batches -------------------------------------------------------------------------------

  def beginBatch(): Unit = {
    if (inBatch) throw new IllegalStateException("the map is already being updated by a store")
    inBatch = true
    batchStart = gen.endAddress
    undoCount = 0
  }

  /** Keys the batch changed. */
  def changedKeys: Int = undoCount

  /** Each key the batch changed with its value now (null: removed); fresh rows per key. */
  def foreachChange(f: (UnsafeRow, UnsafeRow) => Unit): Unit = {
    val g = gen
    var n = 0
    while (n < undoCount) {
      val s = g.index(g.findRecordKey(undoNew(n)))
      f(g.keyRow(s, keyFields), if (g.isTombstone(s)) null else g.valueRow(s, valueFields))
      n += 1
    }
  }

  /** Ends the batch keeping its changes; compacts when garbage passed the threshold. */
  def endBatch(): Unit = {
    finishBatch()
    compactIfWasteful()
  }

  /** Ends the batch putting back every key's value from before it. */
  def rollback(): Unit = {
    val g = gen
    var n = 0
    while (n < undoCount) {
      val i = g.findRecordKey(undoNew(n))
      val cur = g.index(i)
      val old = undoOld(n)
      val curLive = !g.isTombstone(cur)
      val oldLive = old != Empty && !g.isTombstone(old)
      if (old == Empty) g.deleteSlot(i) else g.index(i) = old
      if (curLive) liveBytes -= g.recordBytes(cur)
      if (oldLive) liveBytes += g.recordBytes(old)
      if (curLive && !oldLive) { liveKeys -= 1; prefixRemove(g.keyRow(cur, keyFields)) }
      if (!curLive && oldLive) { liveKeys += 1; prefixAdd(g.keyRow(old, keyFields)) }
      n += 1
    }
    finishBatch()
  }

  private def finishBatch(): Unit = {
    inBatch = false
    undoCount = 0
    if (undoNew.length > 1024) { undoNew = new Array(16); undoOld = new Array(16) }
  }

  /** Copies the live records into new pages when the garbage is worth it (never during a batch). */
  def compactIfWasteful(): Unit = {
    val garbage = appendedBytes - liveBytes
    if (!inBatch && garbage >= compactMinGarbageBytes && garbage > liveBytes * CompactGarbageRatio) compact()
  }

  private def logUndo(newEntry: Long, oldEntry: Long): Unit = {
    if (undoCount == undoNew.length) {
      undoNew = java.util.Arrays.copyOf(undoNew, undoCount * 2)
      undoOld = java.util.Arrays.copyOf(undoOld, undoCount * 2)
    }
    undoNew(undoCount) = newEntry
    undoOld(undoCount) = oldEntry
    undoCount += 1
  }

  // ---- index growth and compaction ---------------------------------------------------------------

  /** A larger index for the same pages; drops the tombstones no batch needs (those before the batch). */
  private def grow(g: Generation): Unit = {
    val old = g.index
    var needed = 0L
    old.foreach(s => if (s != Empty && !dropOnRehash(g, s)) needed += 1)
    val next = new Array[Long](slotsFor(needed + 1))
    java.util.Arrays.fill(next, Empty)
    var used = 0
    old.foreach { s =>
      if (s != Empty && !dropOnRehash(g, s)) { Generation.insert(next, s); used += 1 }
    }
    g.index = next
    g.slotsUsed = used
  }

  private def dropOnRehash(g: Generation, s: Long): Boolean =
    g.isTombstone(s) && (!inBatch || address(s) < batchStart)

  private def compact(): Unit = {
    val g = gen
    // The first page fits a small store whole; a large one gets full-size pages at once.
    val first = math.min(maxPageBytes.toLong, math.max(FirstPageBytes.toLong, liveBytes)).toInt
    val next = new Generation(slotsFor(liveKeys), first, maxPageBytes)
    var used = 0
    g.index.foreach { s =>
      if (s != Empty && !g.isTombstone(s)) {
        Generation.insert(next.index, (s & HashMask) | next.appendRaw(g, s))
        used += 1
      }
    }
    next.slotsUsed = used
    gen = next
    appendedBytes = liveBytes
  }

  /**
   * Reads the slots lazily, so entries put after it was created are seen if their slot is ahead of
   * it, as the HDFS provider's ConcurrentHashMap iterator does (Spark's SPARK-38320 test expects
   * that, and an iterator over an empty map to stay empty).
   */
  private def entriesOf(g: Generation, index: Array[Long]): Iterator[(UnsafeRow, UnsafeRow)] =
    if (liveKeys == 0) Iterator.empty
    else
      new Iterator[(UnsafeRow, UnsafeRow)] {
        private var i = 0
        override def hasNext: Boolean = {
          while (i < index.length && (index(i) == Empty || g.isTombstone(index(i)))) i += 1
          i < index.length
        }
        override def next(): (UnsafeRow, UnsafeRow) = {
          if (!hasNext) throw new NoSuchElementException
          val s = index(i)
          i += 1
          (g.keyRow(s, keyFields), g.valueRow(s, valueFields))
        }
      }

  private def prefixAdd(key: UnsafeRow): Unit = if (prefixIndex != null) {
    val k = key.copy()
    if (prefixIndex.computeIfAbsent(prefixOf(k), _ => ConcurrentHashMap.newKeySet[UnsafeRow]()).add(k))
      prefixKeyBytes += k.getSizeInBytes
  }

  private def prefixRemove(key: UnsafeRow): Unit = if (prefixIndex != null) {
    val prefix = prefixOf(key)
    val keys = prefixIndex.get(prefix)
    if (keys != null) {
      if (keys.remove(key)) prefixKeyBytes -= key.getSizeInBytes
      if (keys.isEmpty) prefixIndex.remove(prefix, keys)
    }
  }

  private def prefixOf(key: UnsafeRow): UnsafeRow = prefixProjection.get.apply(key).copy()
}

private[sharedstate] object StoreRowMap {

  /** The pages' size cap: below half a G1 region (1 MB for heaps under 4 GB), so no page is a humongous object. */
  val MaxPageBytes: Int = 256 * 1024

  /** A store's first page; each next page doubles up to [[MaxPageBytes]] (small stores stay small). */
  val FirstPageBytes = 4096

  /** Compact when garbage exceeds this fraction of the live bytes (and [[CompactMinGarbageBytes]]). */
  val CompactGarbageRatio = 0.5
  val CompactMinGarbageBytes: Long = 64 * 1024

  /** Index load factor: linear probing stays short below it. */
  val MaxLoad = 0.7

  /** A prefix index entry: set node, UnsafeRow copy and its array header, prefix share. */
  val PrefixEntryOverheadBytes = 120L

  private val InitialSlots = 16
  private val Empty = -1L
  private val HashMask = 0xffffffff00000000L
  private val AddressMask = 0xffffffffL
  // An address is `page << OffsetBits | offset / 8` in 32 bits: pages up to 256 KB, 2^17 - 1 of them.
  private val OffsetBits = 15
  private val MaxPages = (1 << (32 - OffsetBits)) - 1
  private val BaseOffset = Platform.BYTE_ARRAY_OFFSET.toLong

  private def address(entry: Long): Long = entry & AddressMask

  private def slotsFor(keys: Long): Int = {
    var n = InitialSlots
    while (n * MaxLoad < keys) {
      if (n >= (1 << 30)) throw new IllegalStateException(s"a store of $keys keys is larger than one map holds")
      n <<= 1
    }
    n
  }

  private def align8(n: Int): Int = (n + 7) & ~7

  private def home(hash: Int, mask: Int): Int = {
    val x = hash * -1640531527 // the golden ratio: spreads UnsafeRow's Murmur3 hash over the low bits
    (x ^ (x >>> 16)) & mask
  }

  /** What a snapshot writes: the entries of one moment of a map, unaffected by later updates. */
  final class Frozen private[StoreRowMap] (rows: Iterator[(UnsafeRow, UnsafeRow)]) {
    def foreach(f: (UnsafeRow, UnsafeRow) => Unit): Unit = rows.foreach { case (k, v) => f(k, v) }
  }

  /** Pages and index between two compactions. Pages only grow (new pages, appends at the tail). */
  private final class Generation(slots: Int, firstPageBytes: Int, maxPageBytes: Int) {
    @volatile var pages: Array[Array[Byte]] = new Array(4)
    @volatile var pageCount = 0
    @volatile var index: Array[Long] = { val a = new Array[Long](slots); java.util.Arrays.fill(a, Empty); a }
    var slotsUsed = 0
    var tailUsed = 0
    var nextPageBytes: Int = firstPageBytes
    @volatile var allocatedBytes = 0L

    /** Where the next record goes: every record appended later has a larger address. */
    def endAddress: Long =
      if (pageCount == 0) 0L
      // A page of one oversized row is full: the next record starts the next page.
      else math.min(((pageCount - 1).toLong << OffsetBits) + (tailUsed >>> 3), pageCount.toLong << OffsetBits)

    def append(key: UnsafeRow, value: UnsafeRow): Long = {
      val kl = key.getSizeInBytes
      val vl = if (value == null) -1 else value.getSizeInBytes
      val size = 8 + align8(kl) + (if (vl < 0) 0 else align8(vl))
      val page = room(size)
      val at = BaseOffset + tailUsed
      Platform.putInt(page, at, kl)
      Platform.putInt(page, at + 4, vl)
      Platform.copyMemory(key.getBaseObject, key.getBaseOffset, page, at + 8, kl)
      if (vl >= 0) Platform.copyMemory(value.getBaseObject, value.getBaseOffset, page, at + 8 + align8(kl), vl)
      commitAppend(size)
    }

    /** Copies the record of `entry` in generation `from` here; returns its address. */
    def appendRaw(from: Generation, entry: Long): Long = {
      val size = from.recordBytes(entry)
      val page = room(size)
      Platform.copyMemory(from.pageOf(entry), BaseOffset + from.offsetOf(entry), page, BaseOffset + tailUsed, size)
      commitAppend(size)
    }

    private def room(size: Int): Array[Byte] = {
      if (pageCount == 0 || tailUsed + size > pages(pageCount - 1).length) {
        if (pageCount == MaxPages) throw new IllegalStateException(s"a store holds more than $MaxPages pages of rows")
        val bytes = if (size > nextPageBytes) size else nextPageBytes
        if (pageCount == pages.length) pages = java.util.Arrays.copyOf(pages, pageCount * 2)
        pages(pageCount) = new Array[Byte](bytes)
        pageCount += 1
        tailUsed = 0
        allocatedBytes += bytes
        if (nextPageBytes < maxPageBytes) nextPageBytes = math.min(nextPageBytes * 2, maxPageBytes)
      }
      pages(pageCount - 1)
    }

    private def commitAppend(size: Int): Long = {
      val a = ((pageCount - 1).toLong << OffsetBits) | (tailUsed >>> 3)
      tailUsed += size
      a
    }

    def pageOf(entry: Long): Array[Byte] = pages((address(entry) >>> OffsetBits).toInt)
    def offsetOf(entry: Long): Long = (address(entry) & ((1L << OffsetBits) - 1)) << 3

    def isTombstone(entry: Long): Boolean = Platform.getInt(pageOf(entry), BaseOffset + offsetOf(entry) + 4) < 0

    def recordBytes(entry: Long): Int = {
      val page = pageOf(entry)
      val at = BaseOffset + offsetOf(entry)
      val vl = Platform.getInt(page, at + 4)
      8 + align8(Platform.getInt(page, at)) + (if (vl < 0) 0 else align8(vl))
    }

    def keyRow(entry: Long, fields: Int): UnsafeRow = {
      val page = pageOf(entry)
      val at = BaseOffset + offsetOf(entry)
      val row = new UnsafeRow(fields)
      row.pointTo(page, at + 8, Platform.getInt(page, at))
      row
    }

    def valueRow(entry: Long, fields: Int): UnsafeRow = {
      val page = pageOf(entry)
      val at = BaseOffset + offsetOf(entry)
      val kl = Platform.getInt(page, at)
      val row = new UnsafeRow(fields)
      row.pointTo(page, at + 8 + align8(kl), Platform.getInt(page, at + 4))
      row
    }

    /** The slot holding the key (bytes at base/offset), or the empty slot where it would go. */
    def find(base: AnyRef, offset: Long, length: Int, hash: Int): Int = {
      val idx = index
      val mask = idx.length - 1
      var i = home(hash, mask)
      while (true) {
        val s = idx(i)
        if (s == Empty) return i
        if ((s >>> 32).toInt == hash) {
          val page = pageOf(s)
          val at = BaseOffset + offsetOf(s)
          if (Platform.getInt(page, at) == length && ByteArrayMethods.arrayEquals(page, at + 8, base, offset, length))
            return i
        }
        i = (i + 1) & mask
      }
      -1
    }

    /** The slot of the key whose bytes are in the record of `entry`. */
    def findRecordKey(entry: Long): Int = {
      val page = pageOf(entry)
      val at = BaseOffset + offsetOf(entry)
      find(page, at + 8, Platform.getInt(page, at), (entry >>> 32).toInt)
    }

    /** Empties slot `i`, shifting back the entries after it that probed past it (linear probing's deletion). */
    def deleteSlot(i: Int): Unit = {
      val idx = index
      val mask = idx.length - 1
      var hole = i
      var j = (i + 1) & mask
      while (idx(j) != Empty) {
        val h = home((idx(j) >>> 32).toInt, mask)
        if (((j - h) & mask) >= ((j - hole) & mask)) { idx(hole) = idx(j); hole = j }
        j = (j + 1) & mask
      }
      idx(hole) = Empty
      slotsUsed -= 1
    }
  }

  private object Generation {

    /** Puts an entry whose key is not in `index` yet. */
    def insert(index: Array[Long], entry: Long): Unit = {
      val mask = index.length - 1
      var i = home((entry >>> 32).toInt, mask)
      while (index(i) != Empty) i = (i + 1) & mask
      index(i) = entry
    }
  }
}
