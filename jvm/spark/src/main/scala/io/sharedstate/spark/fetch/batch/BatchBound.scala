package io.sharedstate.spark.fetch.batch

/**
 * What a fetch join's micro-batch decides with, fixed when the batch is planned: `u`, the U below which
 * it answers events, `f`, the join's own fetch progress F below which a new event is late, and the
 * waiting events it takes over: those of batch `previous` (none if -1), written in `previousParts`
 * files under `waitingDir` (see [[WaitingEventFiles]]; the directory is not recorded, it is where the
 * join's checkpoint is).
 */
private[sharedstate] final case class BatchBound(u: Long, f: Long, previous: Long = -1L, previousParts: Int = 0,
    waitingDir: String = null) {
  def encode: String = s"$u $f $previous $previousParts"
}

private[sharedstate] object BatchBound {
  def decode(text: String): BatchBound = text.trim.split("\\s+") match {
    case Array(u, f, previous, parts) => BatchBound(u.toLong, f.toLong, previous.toLong, parts.toInt)
    case other => throw new IllegalStateException(
        s"A fetch-join batch bound file holds '${other.mkString(" ")}', not 'U F previous-batch previous-parts'.")
  }
}
