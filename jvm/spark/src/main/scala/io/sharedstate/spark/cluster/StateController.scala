package io.sharedstate.spark.cluster

import io.sharedstate.core.{ChangeSubscription, RejectedUpdate, StateMetrics, StateSpec, WriterStatus}
import io.sharedstate.core.State.CommitOutcome

/**
 * The driver's control of one State: its definition, its progress (U and F) and its writers' and
 * readers' lifecycle. [[LocalStateController]] when the State lives in the driver's JVM (local mode),
 * [[ClusterStateController]] when its partitions live on hosts; [[Coordinator]] picks one per State.
 */
private[sharedstate] trait StateController {
  def name: String
  def spec: StateSpec

  /**
   * Which creation of the State this is: a State dropped and created again under its name has another
   * one. Queries record it when they are planned and fail when it changed (see [[Incarnations]]).
   */
  def incarnation: Long
  def partitionCount: Int
  def updateProgress: Long
  def fetchProgress: Long
  def writerProgress(writer: String): Option[Long]
  def readerProgress(reader: String): Option[Long]
  def lastCommittedEpoch(writer: String): Long
  def isDurable: Boolean

  /** The owner of each partition (empty when the driver's JVM holds the State). */
  def owners: Seq[HostId]

  /** Partitions rebuilt elsewhere after losing their host, and how long each move took. */
  def moves: Seq[ClusterStateController.Move]

  /**
   * A subscription to the State's change feed from `from` (see core ChangeFeed) when the State lives
   * in this JVM; None when its partitions are on hosts, where the change stream subscribes to each
   * host's own feed (see changes.HostChangeFeeds).
   */
  def subscribeChanges(from: Long): Option[ChangeSubscription]

  def registerWriter(writer: String): Unit
  def abortEpoch(writer: String, epoch: Long): Unit
  def finishWriter(writer: String): Unit

  /** The writer is not running (its query stopped) or idle: it stops holding U until it registers again. */
  def pauseWriter(writer: String): Unit

  /** Every writer with its progress, last committed epoch and status (active, paused, finished). */
  def writerStatuses: Seq[WriterStatus]
  def deregisterWriter(writer: String): Unit
  def registerReader(reader: String): Unit
  def reportFetchProgress(reader: String, progress: Long): Unit
  def finishReader(reader: String): Unit
  def deregisterReader(reader: String): Unit

  /**
   * Commits `epoch` of `writer`. `payload` (a durable State's changelog files) and `finish` (a bulk
   * load) go to the journal, in one Delta transaction, before any partition applies the commit.
   */
  def commitEpoch(
      writer: String, epoch: Long, progress: Long, payload: AnyRef = null, finish: Boolean = false): CommitOutcome

  /** U, F, per-writer progress, sizes and counts (summed over the hosts in a cluster). */
  def metrics: StateMetrics

  def rejectedUpdates: Seq[RejectedUpdate]

  /** Registers `reader` unless it is registered already (a restart keeps its F). */
  def ensureReader(reader: String): Unit = synchronized {
    if (readerProgress(reader).isEmpty) registerReader(reader)
  }
}
