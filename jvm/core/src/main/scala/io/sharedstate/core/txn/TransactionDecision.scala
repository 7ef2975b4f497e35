package io.sharedstate.core.txn

/** What a [[TransactionLogic]] decides from the values it read. */
sealed trait TransactionDecision

object TransactionDecision {

  /** Commit with one [[WriteValue]] per key of the write set, in the write set's order. */
  final case class Commit(writes: IndexedSeq[WriteValue]) extends TransactionDecision

  /** Abort: no write of the transaction takes effect; `reason` goes to its outcome. */
  final case class Abort(reason: String) extends TransactionDecision

  def commit(writes: WriteValue*): Commit = Commit(writes.toIndexedSeq)
}
