package io.sharedstate.spark.statestore

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.state.{ReadStateStore, StateStoreId, StateStoreIterator, UnsafeRowPair}

/**
 * The reads of one version's rows, the same whether the store is read-only or a task is updating it
 * (a task reads its own writes: both read the map it writes into).
 */
private[sharedstate] trait StoreRowReads extends ReadStateStore {
  protected def provider: SharedStateStoreProvider
  protected def rows: StoreRowMap

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
}
