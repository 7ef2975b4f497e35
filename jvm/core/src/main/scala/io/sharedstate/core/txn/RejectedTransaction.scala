package io.sharedstate.core.txn

/**
 * A transaction the group did not take because it was `late`: its time was below the group's update
 * progress U when its epoch committed (like a late update). It has no effect and no outcome of the
 * group's ([[TransactionGroup.drainLate]] hands it out instead); each member State it would have
 * written logs one rejected update per such key, with reason [[RejectedTransaction.LateInState]].
 */
final case class RejectedTransaction(id: TransactionId, time: Long, reason: String, updateProgressAtArrival: Long,
    payload: Array[Byte])

object RejectedTransaction {
  val Late = "late"

  /** The reason of a late transaction in a member State's rejected log (and rejected table): no value. */
  val LateInState = "late_transaction"
}
