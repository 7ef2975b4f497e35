package io.sharedstate.spark.distributed

import io.sharedstate.core.{ChangeSubscription, RejectedUpdate, State, StateMetrics, StateSpec}
import io.sharedstate.core.State.CommitOutcome
import io.sharedstate.spark.distributed.Messages._

/**
 * The driver's face of one State: its definition, its progress (U and F) and its writers' and
 * readers' lifecycle. In local mode it is the State itself. In a cluster it keeps a data-less copy
 * of the State (the progress keeper) and sends every lifecycle step to each host, in one order under
 * one lock, before applying it to the copy: every host computes the same U, and U on the driver
 * never runs ahead of what the hosts have applied.
 */
final class DriverState private[distributed] (progressKeeper: State, cluster: Option[(StateRoute, ClusterNode)]) {
  def name: String = progressKeeper.name
  def spec: StateSpec = progressKeeper.spec
  def partitionCount: Int = progressKeeper.partitionCount
  def updateProgress: Long = progressKeeper.updateProgress
  def fetchProgress: Long = progressKeeper.fetchProgress
  def writerProgress(writer: String): Option[Long] = progressKeeper.writerProgress(writer)
  def readerProgress(reader: String): Option[Long] = progressKeeper.readerProgress(reader)
  def lastCommittedEpoch(writer: String): Long = progressKeeper.lastCommittedEpoch(writer)

  /** The owner of each partition (empty in local mode). */
  def owners: Seq[HostId] = cluster.map(_._1.owners.toSeq).getOrElse(Nil)

  /**
   * A subscription to the State's change feed from `from` (see core ChangeFeed), in local mode where
   * the State lives in this JVM. None in a cluster: there the change stream subscribes to each
   * host's own feed (see HostChangeFeeds).
   */
  def subscribeChanges(from: Long): Option[ChangeSubscription] = cluster match {
    case None => Some(progressKeeper.subscribeChanges(from))
    case Some(_) => None
  }

  def registerWriter(writer: String): Unit = step(RegisterWriter(name, incarnation, writer))(_.registerWriter(writer))
  def abortEpoch(writer: String, epoch: Long): Unit = step(AbortEpoch(name, incarnation, writer, epoch))(_.abortEpoch(writer, epoch))
  def finishWriter(writer: String): Unit = step(FinishWriter(name, incarnation, writer))(_.finishWriter(writer))
  def deregisterWriter(writer: String): Unit = step(DeregisterWriter(name, incarnation, writer))(_.deregisterWriter(writer))
  def registerReader(reader: String): Unit = step(RegisterReader(name, incarnation, reader))(_.registerReader(reader))
  def reportFetchProgress(reader: String, progress: Long): Unit =
    step(ReportFetchProgress(name, incarnation, reader, progress))(_.reportFetchProgress(reader, progress))
  def finishReader(reader: String): Unit = step(FinishReader(name, incarnation, reader))(_.finishReader(reader))
  def deregisterReader(reader: String): Unit = step(DeregisterReader(name, incarnation, reader))(_.deregisterReader(reader))

  /**
   * Commits `epoch` of `writer` at every host (each applies what the new U makes final there), then
   * on the driver. With lateness policy `fail`, every host is checked first, so a late update fails
   * the epoch before any host applies it. Accepted and rejected counts are summed over the hosts.
   * `payload` (a durable State's changelog files) and `finish` (a bulk load) go to the State's own
   * commit in local mode; durable States are local-only in this release.
   */
  def commitEpoch(writer: String, epoch: Long, progress: Long, payload: AnyRef = null,
      finish: Boolean = false): CommitOutcome = cluster match {
    case None => progressKeeper.commitEpoch(writer, epoch, progress, payload, finish)
    case Some(_) if finish =>
      val outcome = commitEpoch(writer, epoch, progress)
      finishWriter(writer)
      outcome.copy(updateProgress = updateProgress)
    case Some(_) => synchronized {
      if (spec.lateness == StateSpec.FailLate) broadcast(CheckNotLate(name, incarnation, writer, epoch))
      val counts = broadcast(CommitEpoch(name, incarnation, writer, epoch, progress)).map(_.asInstanceOf[Committed])
      progressKeeper.commitEpoch(writer, epoch, progress)
        .copy(accepted = counts.map(_.accepted).sum, rejected = counts.map(_.rejected).sum)
    }
  }

  /** Sizes and counts summed over the hosts; U, F and per-writer progress from the driver. */
  def metrics: StateMetrics = cluster match {
    case None => progressKeeper.metrics
    case Some(_) =>
      val own = progressKeeper.metrics
      val parts = broadcast(GetMetrics(name, incarnation)).map(_.asInstanceOf[StateMetrics])
      def sum(f: StateMetrics => Long): Long = parts.map(f).sum
      def sumSeq(f: StateMetrics => IndexedSeq[Long]): IndexedSeq[Long] =
        parts.map(f).filter(_.nonEmpty).reduceOption((a, b) => a.zip(b).map { case (x, y) => x + y }).getOrElse(IndexedSeq.empty)
      own.copy(
        keys = sum(_.keys), bytesHeld = sum(_.bytesHeld), updatesApplied = sum(_.updatesApplied),
        updatesStaged = sum(_.updatesStaged), updatesRejected = sum(_.updatesRejected),
        writerCounts = parts.flatMap(_.writerCounts.toSeq).groupBy(_._1).map { case (w, cs) =>
          w -> (cs.map(_._2._1).sum, cs.map(_._2._2).sum) },
        rawBytes = sum(_.rawBytes), pairs = sum(_.pairs), pairsCompacted = sum(_.pairsCompacted),
        stagedBytes = sum(_.stagedBytes), pendingFetches = parts.map(_.pendingFetches).sum,
        partitionBytes = sumSeq(_.partitionBytes), partitionKeys = sumSeq(_.partitionKeys))
  }

  def rejectedUpdates: Seq[RejectedUpdate] = cluster match {
    case None => progressKeeper.rejectedUpdates
    case Some((route, node)) => new RoutedStateClient(route, node).rejectedUpdates
  }

  private[distributed] def close(): Unit = progressKeeper.close()

  private def incarnation: Long = cluster.map(_._1.incarnation).getOrElse(0L)

  private def step(message: Lifecycle)(local: State => Unit): Unit = cluster match {
    case None => local(progressKeeper)
    case Some(_) => synchronized { broadcast(message); local(progressKeeper) }
  }

  // All hosts at once, then every answer awaited (a failure names the host and its partitions).
  private def broadcast(message: Any): Seq[Any] = cluster match {
    case None => Nil
    case Some((route, node)) =>
      val asked = route.hosts.map(h => h -> node.link(h).ask(message))
      asked.map { case (h, f) => HostLink.await[Any](f, h, name, route.partitionsOf(h)) }
  }
}
