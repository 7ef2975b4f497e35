package io.sharedstate.spark.statestore

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong

import org.apache.spark.sql.catalyst.expressions.{BoundReference, UnsafeProjection, UnsafeRow}
import org.apache.spark.sql.types.StructType

/**
 * The one live map of a loaded store: UnsafeRow keys to UnsafeRow values, each an exact-size copy.
 * Concurrent so that an operator may remove keys while it iterates (Spark's watermark eviction
 * does). With a prefix-key encoder (session windows) it also indexes keys by their first columns.
 *
 * `version` is the committed version the map holds when no store is updating it.
 */
private[sharedstate] final class StoreRowMap(keySchema: StructType, numColsPrefixKey: Int,
    @volatile var version: Long) {
  private val rows = new ConcurrentHashMap[UnsafeRow, UnsafeRow]()
  private val bytes = new AtomicLong(0L)

  private val prefixIndex: ConcurrentHashMap[UnsafeRow, java.util.Set[UnsafeRow]] =
    if (numColsPrefixKey > 0) new ConcurrentHashMap() else null

  // Not thread-safe (the projection reuses its output row): one per thread.
  private val prefixProjection: ThreadLocal[UnsafeProjection] = ThreadLocal.withInitial { () =>
    UnsafeProjection.create(keySchema.fields.take(numColsPrefixKey).toSeq.zipWithIndex.map { case (f, i) =>
      BoundReference(i, f.dataType, f.nullable)
    })
  }

  def size: Long = rows.size.toLong

  /** Heap estimate: the rows' bytes plus the objects around each entry (map node, two UnsafeRows, two arrays). */
  def estimatedBytes: Long = bytes.get + size * StoreRowMap.EntryOverheadBytes

  def get(key: UnsafeRow): UnsafeRow = rows.get(key)

  /** Puts copies the caller handed over (not copied again); returns the previous value or null. */
  def put(key: UnsafeRow, value: UnsafeRow): UnsafeRow = {
    val prev = rows.put(key, value)
    if (prev == null) {
      bytes.addAndGet(key.getSizeInBytes.toLong + value.getSizeInBytes)
      if (prefixIndex != null)
        prefixIndex.computeIfAbsent(prefixOf(key), _ => ConcurrentHashMap.newKeySet[UnsafeRow]()).add(key)
    } else bytes.addAndGet(value.getSizeInBytes.toLong - prev.getSizeInBytes)
    prev
  }

  /** Removes the key; returns the previous value or null. */
  def remove(key: UnsafeRow): UnsafeRow = {
    val prev = rows.remove(key)
    if (prev != null) {
      bytes.addAndGet(-(key.getSizeInBytes.toLong + prev.getSizeInBytes))
      if (prefixIndex != null) {
        val prefix = prefixOf(key)
        val keys = prefixIndex.get(prefix)
        if (keys != null) {
          keys.remove(key)
          if (keys.isEmpty) prefixIndex.remove(prefix, keys)
        }
      }
    }
    prev
  }

  def entries: java.util.Iterator[java.util.Map.Entry[UnsafeRow, UnsafeRow]] = rows.entrySet.iterator

  /** The keys that start with `prefix` (a row of the first `numColsPrefixKey` key columns). */
  def keysWithPrefix(prefix: UnsafeRow): java.util.Iterator[UnsafeRow] = {
    if (prefixIndex == null) throw new IllegalStateException("prefix scan on a store without a prefix key encoder")
    val keys = prefixIndex.get(prefix)
    if (keys == null) java.util.Collections.emptyIterator() else keys.iterator
  }

  private def prefixOf(key: UnsafeRow): UnsafeRow = prefixProjection.get.apply(key).copy()
}

private[sharedstate] object StoreRowMap {
  // ConcurrentHashMap node (32) + table slot (8) + 2 UnsafeRow objects (2 x 40) + 2 byte[] headers (2 x 16)
  val EntryOverheadBytes = 152L
}
