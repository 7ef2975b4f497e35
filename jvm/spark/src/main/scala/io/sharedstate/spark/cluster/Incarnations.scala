package io.sharedstate.spark.cluster

import io.sharedstate.core.SharedStateException

/** The check every query makes on each access: the State is still the creation it was planned for. */
private[sharedstate] object Incarnations {
  def check(state: String, planned: Long, now: Long, what: String): Unit =
    if (planned != now) throw new SharedStateException(
      s"State '$state' was dropped or created again since this $what was planned (creation $planned, now $now): " +
        "its values and progress are not the ones the query started with. Restart the query; if the State's " +
        "definition changed, with a new checkpoint location.")
}
