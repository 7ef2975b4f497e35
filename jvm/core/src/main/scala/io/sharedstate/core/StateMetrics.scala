package io.sharedstate.core

/**
 * A point-in-time view of a State's size and progress, for metrics and `progress()`. Bytes are the
 * engine's estimate of heap held (see [[MemoryEstimate]]); `rawBytes` counts keys, timestamps and values only.
 * `bytesHeld` (and `partitionBytes`) are the applied entries; staged updates (`stagedBytes`) and the
 * in-memory rejected log (`rejectedBytes`) are counted apart, and all three count against the memory limit.
 * `updatesRejected` counts every rejected update; `rejectedDropped` those the log did not keep (past
 * the State's `rejectedLogCap`).
 */
final case class StateMetrics(
    name: String,
    updateProgress: Long,
    keys: Long,
    bytesHeld: Long,
    updatesApplied: Long,
    updatesStaged: Long,
    updatesRejected: Long,
    writers: Map[String, Long],
    writerCounts: Map[String, (Long, Long)],
    fetchProgress: Long = EventTime.MinusInfinity,
    readers: Map[String, Long] = Map.empty,
    rawBytes: Long = 0L,
    pairs: Long = 0L,
    pairsCompacted: Long = 0L,
    stagedBytes: Long = 0L,
    pendingFetches: Int = 0,
    memoryLimitBytes: Long = 0L,
    partitionBytes: IndexedSeq[Long] = IndexedSeq.empty,
    partitionKeys: IndexedSeq[Long] = IndexedSeq.empty,
    rejectedBytes: Long = 0L,
    rejectedDropped: Long = 0L)
