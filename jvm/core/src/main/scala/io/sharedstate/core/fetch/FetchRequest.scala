package io.sharedstate.core.fetch

import io.sharedstate.core.Key

/** A fetch of `key` at reply time `time` (for ranges and aggregates: the upper end, inclusive). */
final case class FetchRequest(key: Key, time: Long, rule: FetchRule = FetchRule.Latest,
    mode: ReadMode = ReadMode.Committed) {
  def replyTime: Long = mode.replyTime(time)
}
