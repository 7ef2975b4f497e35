package io.sharedstate.spark

/**
 * What a fetch join's micro-batch decides with, fixed when the batch is planned: `u`, the U below which
 * it answers events, and `f`, the join's own fetch progress F below which a new event is late.
 */
final case class BatchBound(u: Long, f: Long) {
  def encode: String = s"$u $f"
}

object BatchBound {
  def decode(text: String): BatchBound = text.trim.split("\\s+") match {
    case Array(u, f) => BatchBound(u.toLong, f.toLong)
    case other => throw new IllegalStateException(s"A fetch-join batch bound file holds '${other.mkString(" ")}', not 'U F'.")
  }
}
