package io.sharedstate.core.txn

/**
 * The body of a transaction: given the values of its read set, decide to commit (with the new values
 * of its write set) or to abort. Called once per transaction, on any thread of the executor, once
 * every read is resolved; it must be a pure function of `txn` and `reads` (the schedule is
 * deterministic only if the logic is). Values are binary rows in the State's value layout
 * (`io.sharedstate.core.row.BinaryRow`); `None` is a key with no value at the read time (never
 * written, or deleted).
 *
 * A logic that throws aborts its transaction with reason `logic_failed: <message>`; a commit whose
 * number of writes differs from the write set aborts with reason `bad_decision: ...`.
 */
trait TransactionLogic extends Serializable {
  def decide(txn: Transaction, reads: IndexedSeq[Option[Array[Byte]]]): TransactionDecision
}
