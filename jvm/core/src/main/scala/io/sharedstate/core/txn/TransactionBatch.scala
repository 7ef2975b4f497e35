package io.sharedstate.core.txn

import scala.collection.mutable.ArrayBuffer

/**
 * The transactions one writer task produced for one epoch, in the task's order (the order gives each
 * its sequence number, the last part of its [[TransactionId]]). Staged with
 * [[TransactionGroup.stage]]; a retried task's batch replaces the earlier attempt's, like an
 * `UpdateBatch`. Filled by one task thread, then handed to the group.
 */
final class TransactionBatch {
  private val txns = ArrayBuffer.empty[Transaction]

  def add(txn: Transaction): Unit = {
    if (txn == null) throw new IllegalArgumentException("TransactionBatch.add needs a Transaction.")
    txns += txn
  }

  def size: Int = txns.length
  def apply(i: Int): Transaction = txns(i)
  def transactions: IndexedSeq[Transaction] = txns.toIndexedSeq
}
