package io.sharedstate.core

/**
 * A point-in-time view of a State's size and progress, for metrics and `progress()`. Bytes are the
 * engine's estimate of heap held (see [[MemoryEstimate]]); `rawBytes` counts keys, timestamps and values only.
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
    partitionKeys: IndexedSeq[Long] = IndexedSeq.empty)
