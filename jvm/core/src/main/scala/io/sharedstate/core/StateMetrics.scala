package io.sharedstate.core

/** A point-in-time view of a State's size and progress, for metrics and `progress()`. */
final case class StateMetrics(
    name: String,
    updateProgress: Long,
    keys: Long,
    bytesHeld: Long,
    updatesApplied: Long,
    updatesStaged: Long,
    updatesRejected: Long,
    writers: Map[String, Long],
    writerCounts: Map[String, (Long, Long)])
