package io.sharedstate.core

/** The answer to a fetch: not answerable yet, nothing there, or a value with its timestamp. */
sealed trait FetchAnswer

object FetchAnswer {
  /** The fetch time is not yet below update progress U: ask again after U passes it. */
  case object NotYet extends FetchAnswer
  /** Answerable, and the key had no pair at or before the fetch time. */
  case object Absent extends FetchAnswer
  final case class Found(time: Long, value: Array[Byte]) extends FetchAnswer
}
