package io.sharedstate.core.fetch

import io.sharedstate.core.SharedStateException

/**
 * When a fetch at time t may be answered. Read-committed waits until t < U, so the answer never
 * changes; read-uncommitted with staleness s is answered once t - s < U, from what is applied then (SSP).
 */
sealed trait ReadMode {

  /** The reply timestamp: the fetch is answered once it is below update progress U. */
  def replyTime(t: Long): Long
}

object ReadMode {
  case object Committed extends ReadMode {
    def replyTime(t: Long): Long = t
  }

  final case class Uncommitted(staleness: Long) extends ReadMode {
    if (staleness < 0) throw new SharedStateException(
      s"Read-uncommitted staleness must be >= 0 microseconds, got $staleness.")
    def replyTime(t: Long): Long = {
      val r = t - staleness
      if (r > t) Long.MinValue else r // saturate instead of wrapping below -infinity
    }
  }

  /** "committed" or "uncommitted" (with `staleness` in microseconds). */
  def parse(mode: String, staleness: Long): ReadMode = Option(mode).map(_.trim.toLowerCase) match {
    case Some("committed") | Some("read_committed") => Committed
    case Some("uncommitted") | Some("read_uncommitted") => Uncommitted(staleness)
    case _ => throw new SharedStateException(s"Unknown read mode '$mode'. Supported: committed, uncommitted.")
  }
}
