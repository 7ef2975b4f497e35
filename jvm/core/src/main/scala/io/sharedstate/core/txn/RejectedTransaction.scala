package io.sharedstate.core.txn

/**
 * A transaction the group did not take because it was `late`: its time was below the group's update
 * progress U when its epoch committed (like a late update). It has no effect and no outcome.
 */
final case class RejectedTransaction(id: TransactionId, time: Long, reason: String, updateProgressAtArrival: Long,
    payload: Array[Byte])

object RejectedTransaction {
  val Late = "late"
}
