package io.sharedstate.spark.statestore

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{
  ReadStateStore,
  StateStore,
  StateStoreId,
  StateStoreIterator,
  UnsafeRowPair
}

/** A read-only view of one version: the provider's live map when it holds that version, else a map loaded for it. */
private[sharedstate] final class SharedReadStateStore(
    provider: SharedStateStoreProvider,
    val version: Long,
    rows: StoreRowMap)
    extends ReadStateStore {

  override def id: StateStoreId = provider.stateStoreId

  override def get(key: UnsafeRow, colFamilyName: String): UnsafeRow = {
    provider.checkColumnFamily(colFamilyName)
    rows.get(key)
  }

  override def multiGet(keys: Array[UnsafeRow], colFamilyName: String): Iterator[UnsafeRow] = {
    provider.checkColumnFamily(colFamilyName)
    keys.iterator.map(rows.get)
  }

  override def iterator(colFamilyName: String): StateStoreIterator[UnsafeRowPair] = {
    provider.checkColumnFamily(colFamilyName)
    StoreIterators.all(rows)
  }

  override def prefixScan(prefixKey: UnsafeRow, colFamilyName: String): StateStoreIterator[UnsafeRowPair] = {
    provider.checkColumnFamily(colFamilyName)
    StoreIterators.withPrefix(rows, prefixKey)
  }

  override def valuesIterator(key: UnsafeRow, colFamilyName: String): Iterator[UnsafeRow] =
    throw provider.unsupported("multipleValuesPerKey")
  override def prefixScanWithMultiValues(
      prefixKey: UnsafeRow, colFamilyName: String): StateStoreIterator[UnsafeRowPair] =
    throw provider.unsupported("multipleValuesPerKey")
  override def iteratorWithMultiValues(colFamilyName: String): StateStoreIterator[UnsafeRowPair] =
    throw provider.unsupported("multipleValuesPerKey")

  override def abort(): Unit = ()
  override def release(): Unit = ()
  override def allColumnFamilyNames: Set[String] = Set(StateStore.DEFAULT_COL_FAMILY_NAME)

  override def toString: String = s"SharedReadStateStore[id=${provider.stateStoreId}, version=$version]"
}

/** Iterators over a [[StoreRowMap]]; each reuses one pair, as Spark's own stores do. */
private[sharedstate] object StoreIterators {
  def all(rows: StoreRowMap): StateStoreIterator[UnsafeRowPair] = {
    val entries = rows.entries
    val pair = new UnsafeRowPair()
    new StateStoreIterator(
      new Iterator[UnsafeRowPair] {
        override def hasNext: Boolean = entries.hasNext
        override def next(): UnsafeRowPair = {
          val e = entries.next()
          pair.withRows(e.getKey, e.getValue)
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
