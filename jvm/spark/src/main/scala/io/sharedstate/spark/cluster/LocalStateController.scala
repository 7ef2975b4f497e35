package io.sharedstate.spark.cluster

import io.sharedstate.core.{ChangeSubscription, RejectedUpdate, State, StateMetrics, StateSpec, WriterStatus}
import io.sharedstate.core.State.CommitOutcome
import io.sharedstate.spark.durable.DurableStates

/** Local mode: the State itself lives in the driver's JVM, so every step is a direct call on it. */
private[sharedstate] final class LocalStateController(state: State) extends StateController {
  override def name: String = state.name
  override def spec: StateSpec = state.spec
  override def incarnation: Long = state.incarnation
  override def partitionCount: Int = state.partitionCount
  override def updateProgress: Long = state.updateProgress
  override def fetchProgress: Long = state.fetchProgress
  override def writerProgress(writer: String): Option[Long] = state.writerProgress(writer)
  override def readerProgress(reader: String): Option[Long] = state.readerProgress(reader)
  override def lastCommittedEpoch(writer: String): Long = state.lastCommittedEpoch(writer)
  override def isDurable: Boolean = DurableStates.rootOf(state.name).isDefined
  override def owners: Seq[HostId] = Nil
  override def moves: Seq[ClusterStateController.Move] = Nil
  override def subscribeChanges(from: Long): Option[ChangeSubscription] = Some(state.subscribeChanges(from))

  override def registerWriter(writer: String): Unit = state.registerWriter(writer)
  override def abortEpoch(writer: String, epoch: Long): Unit = state.abortEpoch(writer, epoch)
  override def finishWriter(writer: String): Unit = state.finishWriter(writer)
  override def pauseWriter(writer: String): Unit = state.pauseWriter(writer)
  override def writerStatuses: Seq[WriterStatus] = state.writerStatuses
  override def deregisterWriter(writer: String): Unit = state.deregisterWriter(writer)
  override def registerReader(reader: String): Unit = state.registerReader(reader)
  override def reportFetchProgress(reader: String, progress: Long): Unit = state.reportFetchProgress(reader, progress)
  override def finishReader(reader: String): Unit = state.finishReader(reader)
  override def deregisterReader(reader: String): Unit = state.deregisterReader(reader)

  override def commitEpoch(
      writer: String, epoch: Long, progress: Long, payload: AnyRef, finish: Boolean): CommitOutcome =
    state.commitEpoch(writer, epoch, progress, payload, finish)

  override def metrics: StateMetrics = state.metrics
  override def rejectedUpdates: Seq[RejectedUpdate] = state.rejectedUpdates

  // A controller is made per look-up here: the State itself is what registrations synchronise on.
  override def ensureReader(reader: String): Unit =
    state.synchronized { if (state.readerProgress(reader).isEmpty) state.registerReader(reader) }
}
