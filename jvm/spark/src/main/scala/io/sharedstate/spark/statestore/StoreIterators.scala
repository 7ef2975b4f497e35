package io.sharedstate.spark.statestore

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{StateStoreIterator, UnsafeRowPair}

/**
 * Iterators over a [[StoreRowMap]]; each reuses one pair, as Spark's own stores do, with fresh rows
 * per entry (they point into the map's pages, which never change, so the caller may keep them).
 */
private[sharedstate] object StoreIterators {
  def all(rows: StoreRowMap): StateStoreIterator[UnsafeRowPair] = {
    val entries = rows.entries
    val pair = new UnsafeRowPair()
    new StateStoreIterator(
      new Iterator[UnsafeRowPair] {
        override def hasNext: Boolean = entries.hasNext
        override def next(): UnsafeRowPair = {
          val (k, v) = entries.next()
          pair.withRows(k, v)
        }
      },
      () => ()
    )
  }

  def withPrefix(rows: StoreRowMap, prefix: UnsafeRow): StateStoreIterator[UnsafeRowPair] = {
    val keys = rows.keysWithPrefix(prefix)
    val pair = new UnsafeRowPair()
    // A key removed while we iterate has no value any more: skip it.
    val it = new Iterator[UnsafeRowPair] {
      private var nextKey: UnsafeRow = _
      private var nextValue: UnsafeRow = _
      advance()
      private def advance(): Unit = {
        nextKey = null
        while (nextKey == null && keys.hasNext) {
          val k = keys.next()
          val v = rows.get(k)
          if (v != null) { nextKey = k; nextValue = v }
        }
      }
      override def hasNext: Boolean = nextKey != null
      override def next(): UnsafeRowPair = {
        if (nextKey == null) throw new NoSuchElementException
        pair.withRows(nextKey, nextValue)
        advance()
        pair
      }
    }
    new StateStoreIterator(it, () => ())
  }
}
