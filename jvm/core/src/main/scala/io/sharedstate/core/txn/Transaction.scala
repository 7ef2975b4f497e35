package io.sharedstate.core.txn

/**
 * One transaction as a writer task stages it: an event time, the keys it reads, the keys it may
 * write (declared before it runs: TStream's F2, known read and write sets), its logic and an optional
 * payload (e.g. the event's row) handed back in its outcome. Its [[TransactionId]] is given when its
 * batch is staged ([[TransactionBatch]] position, the task's writer, epoch and task).
 *
 * Every read sees exactly the effects of the transactions and plain updates ordered before it:
 * smaller time, or equal time and earlier in the tie order (docs/engine.md, "Transactions").
 */
final class Transaction(
    val time: Long,
    val reads: IndexedSeq[StateKey],
    val writes: IndexedSeq[StateKey],
    val logic: TransactionLogic,
    val payload: Array[Byte] = null) {
  if (reads == null || writes == null || logic == null) throw new IllegalArgumentException(
    "A Transaction needs a read set, a write set (possibly empty) and a TransactionLogic.")

  /** Every State the transaction touches. */
  def states: Set[String] = (reads.iterator ++ writes.iterator).map(_.state).toSet

  override def toString: String =
    s"Transaction(t=$time, reads=${reads.mkString("[", ", ", "]")}, writes=${writes.mkString("[", ", ", "]")})"
}
