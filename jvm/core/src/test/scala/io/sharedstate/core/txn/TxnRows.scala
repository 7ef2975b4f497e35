package io.sharedstate.core.txn

import io.sharedstate.core.row.{BinaryRow, BinaryRowWriter}

/** One-BIGINT-column binary rows (keys "k BIGINT", values "v BIGINT"), as the txn tests and workloads use them. */
object TxnRows {
  private val reader = new BinaryRow(1)

  def long(v: Long): Array[Byte] = {
    val w = new BinaryRowWriter(1)
    w.setLong(0, v)
    w.toBytes
  }

  def readLong(row: Array[Byte]): Long = reader.getLong(row, 0, 0)

  /** A read's value as a Long, 0 when absent. */
  def orZero(v: Option[Array[Byte]]): Long = v.fold(0L)(readLong)

  def key(state: String, k: Long): StateKey = StateKey(state, long(k))
}
