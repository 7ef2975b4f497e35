package io.sharedstate.core.txn

/** What a committing transaction does to one key of its declared write set. */
sealed trait WriteValue

object WriteValue {

  /** Stores `value` (a binary row of the State's value type) at the transaction's time. */
  final case class Put(value: Array[Byte]) extends WriteValue

  /**
   * Deletes the key at the transaction's time: reads after it see no value (`None`, a `latest` fetch
   * answers Absent), the pairs before it stay (an as-of read before the delete still sees them).
   */
  case object Delete extends WriteValue

  /** Leaves the key as it is (a declared write the transaction turned out not to need). */
  case object Keep extends WriteValue
}
