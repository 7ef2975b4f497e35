package io.sharedstate.core

import io.sharedstate.core.row.ValueType

/** The answer to a fetch: not answerable yet, nothing there, or what the fetch rule computed. */
sealed trait FetchAnswer

object FetchAnswer {

  /** What a `latest` fetch can answer: matching on these three cases is exhaustive. */
  sealed trait LatestAnswer extends FetchAnswer

  /** The fetch's reply time is not yet below update progress U: ask again after U passes it. */
  case object NotYet extends LatestAnswer

  /** Answerable, and the key had nothing for this fetch (no pair at or before t, or an empty range for an aggregate). */
  case object Absent extends LatestAnswer

  /** `latest`: the newest pair at or before t. */
  final case class Found(time: Long, value: Array[Byte]) extends LatestAnswer

  /** `range`: the pairs in the range, oldest first (possibly none). */
  final case class Pairs(times: Array[Long], values: Array[Array[Byte]]) extends FetchAnswer {
    def size: Int = times.length
  }

  /**
   * An aggregate over a range, as a binary row of `rowType`. `emptyRange`: the range held no pair
   * (only `count` and `collect` answer one, with 0 and []; a join treats it as no match).
   */
  final case class Aggregate(row: Array[Byte], rowType: ValueType, emptyRange: Boolean = false) extends FetchAnswer
}
