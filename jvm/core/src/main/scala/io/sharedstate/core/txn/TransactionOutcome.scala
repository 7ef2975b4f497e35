package io.sharedstate.core.txn

/**
 * What became of a transaction once update progress passed its time: committed or aborted (with the
 * reason), and the values it read (in read-set order), which are final: the same on every run.
 */
final case class TransactionOutcome(
    id: TransactionId,
    time: Long,
    committed: Boolean,
    reads: IndexedSeq[Option[Array[Byte]]],
    reason: String,
    payload: Array[Byte]) {
  def aborted: Boolean = !committed
}

object TransactionOutcome {

  /** Order of outcomes (and of the schedule): time, then id. */
  val Order: Ordering[TransactionOutcome] = Ordering.by[TransactionOutcome, (Long, TransactionId)](o => (o.time, o.id))
}
