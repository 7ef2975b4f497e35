package io.sharedstate.core

/**
 * An update the State did not apply, kept with the reason so it can be routed to the late-updates
 * table. `key` or `time` is null when that was the problem.
 */
final case class RejectedUpdate(
    key: Array[Byte],
    time: java.lang.Long,
    value: Array[Byte],
    reason: String,
    writer: String,
    epoch: Long,
    updateProgressAtArrival: Long)

object RejectedUpdate {
  val Late = "late"
  val NullKey = "null_key"
  val NullTime = "null_time"

  /** The update's time was further ahead of the writer's clock than its `maxAhead` allows (a typo like 9999-12-31). */
  val AheadOfClock = "ahead_of_clock"

  /** The update rule threw on this update (the message follows the colon); the rest of its key's chain still applied. */
  val RuleFailed = "rule_failed"
}
