package io.sharedstate.core

/** A writer of a State: its progress, its last committed epoch (-1: none) and whether it holds U back. */
final case class WriterStatus(writer: String, progress: Long, lastEpoch: Long, status: String)

object WriterStatus {

  /** Running: it holds U back. */
  val Active = "active"

  /** Not running (its query stopped) or idle: out of U until it registers again. */
  val Paused = "paused"

  /** Done for good: it no longer holds U back, and once every writer is done U is +infinity. */
  val Finished = "finished"
}
