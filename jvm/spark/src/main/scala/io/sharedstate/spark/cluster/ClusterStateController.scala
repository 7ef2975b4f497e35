package io.sharedstate.spark.cluster

import io.sharedstate.spark.durable.{DeltaJournal, EncodedPartition, PartitionSource, SnapshotSource}

import io.sharedstate.core.{
  ChangeSubscription,
  JournalCommit,
  PartitionHandOver,
  RejectedUpdate,
  SharedStateException,
  State,
  StateJournal,
  StateMetrics,
  StateSpec,
  WriterStatus
}
import io.sharedstate.core.State.CommitOutcome
import Messages._
import java.util.concurrent.TimeUnit
import java.util.concurrent.locks.ReentrantReadWriteLock
import org.apache.spark.internal.Logging
import scala.util.control.NonFatal

/**
 * The driver's control of a State whose partitions live on hosts. It keeps a data-less copy
 * of the State (the progress keeper) and sends every lifecycle step to each host, in one order under
 * one lock, before applying it to the copy: every host computes the same U, and U on the driver
 * never runs ahead of what the hosts have applied.
 *
 * A durable State in a cluster ([[ClusterStateController.Durable]]) journals each step first: the keeper's
 * journal commits it to the Delta changelog, then sends it to the hosts, and only then does the
 * keeper apply it. So no host applies anything the changelog does not hold, and a host that is lost
 * has its partitions rebuilt from the tables on a live one ([[recover]]) while commits wait.
 *
 * `keeperHosted`: the keeper is the State itself, hosted by the driver (a read-only durable State
 * following its owner's changelog): steps apply to it once, directly; requests reach it as a host.
 * `preCopy`: whether a live move pre-copies its partitions (`spark.sharedstate.elasticity.preCopy`).
 */
private[sharedstate] final class ClusterStateController(progressKeeper: State, initialRoute: StateRoute,
    node: ClusterNode, durable: Option[ClusterStateController.Durable] = None, keeperHosted: Boolean = false,
    val preCopy: Boolean = true)
    extends StateController with Logging {
  @volatile private var currentRoute: StateRoute = initialRoute
  // Held (write) while partitions move: routes are not handed out meanwhile.
  private val moving = new ReentrantReadWriteLock()
  // One move at a time; taken before this controller's lock (the fence), which a pre-copy does not hold.
  private val moveLock = new Object
  // Counts of the commit in flight, set by the journal when it sends the commit to the hosts.
  private var hostCounts: Seq[Committed] = Nil
  // A durable State: what the hosts rejected in the step under way (their answers, and the rebuild of
  // a lost host's partitions), written to the rejected table at the step's end (under this lock).
  private val stepRejected = scala.collection.mutable.ArrayBuffer.empty[RejectedUpdate]

  durable.foreach(d => progressKeeper.attachJournal(new ClusterJournal(d.journal)))

  override def name: String = progressKeeper.name
  override def spec: StateSpec = progressKeeper.spec
  override def partitionCount: Int = progressKeeper.partitionCount
  override def updateProgress: Long = progressKeeper.updateProgress
  override def fetchProgress: Long = progressKeeper.fetchProgress
  override def writerProgress(writer: String): Option[Long] = progressKeeper.writerProgress(writer)
  override def readerProgress(reader: String): Option[Long] = progressKeeper.readerProgress(reader)
  override def lastCommittedEpoch(writer: String): Long = progressKeeper.lastCommittedEpoch(writer)
  override def isDurable: Boolean = durable.isDefined

  override def owners: Seq[HostId] = currentRoute.owners.toSeq

  /** Where the partitions are now; waits (bounded) while lost partitions are being rebuilt elsewhere. */
  def route: StateRoute = {
    if (!moving.readLock().tryLock(ClusterStateController.RouteWaitSeconds, TimeUnit.SECONDS))
      throw new SharedStateException(
        s"State '$name': its partitions have been moving for over ${ClusterStateController.RouteWaitSeconds} s (a lost executor's " +
          "partitions are being rebuilt); try again later.")
    try currentRoute
    finally moving.readLock().unlock()
  }

  @volatile private var movesSoFar: Vector[ClusterStateController.Move] = Vector.empty
  override def moves: Seq[ClusterStateController.Move] = movesSoFar

  // The change stream subscribes to each host's own feed (see changes.HostChangeFeeds).
  override def subscribeChanges(from: Long): Option[ChangeSubscription] = None

  override def registerWriter(writer: String): Unit =
    step(RegisterWriter(name, incarnation, writer))(_.registerWriter(writer))
  override def abortEpoch(writer: String, epoch: Long): Unit =
    step(AbortEpoch(name, incarnation, writer, epoch))(_.abortEpoch(writer, epoch))
  override def finishWriter(writer: String): Unit =
    step(FinishWriter(name, incarnation, writer))(_.finishWriter(writer))
  override def pauseWriter(writer: String): Unit =
    step(PauseWriter(name, incarnation, writer))(_.pauseWriter(writer))
  // The keeper sees every lifecycle step, so it knows every writer's progress and status.
  override def writerStatuses: Seq[WriterStatus] = progressKeeper.writerStatuses
  override def deregisterWriter(writer: String): Unit =
    step(DeregisterWriter(name, incarnation, writer))(_.deregisterWriter(writer))
  override def registerReader(reader: String): Unit =
    step(RegisterReader(name, incarnation, reader))(_.registerReader(reader))
  override def reportFetchProgress(reader: String, progress: Long): Unit =
    step(ReportFetchProgress(name, incarnation, reader, progress))(_.reportFetchProgress(reader, progress))
  override def finishReader(reader: String): Unit =
    step(FinishReader(name, incarnation, reader))(_.finishReader(reader))
  override def deregisterReader(reader: String): Unit =
    step(DeregisterReader(name, incarnation, reader))(_.deregisterReader(reader))

  /**
   * Commits `epoch` of `writer` at every host (each applies what the new U makes final there), then
   * on the driver. With lateness policy `fail`, every host is checked first, so a late update fails
   * the epoch before any host applies it. Accepted and rejected counts are summed over the hosts.
   * `payload` (a durable State's changelog files) and `finish` (a bulk load) go to the journal: in
   * one Delta transaction, before any host hears of the commit.
   */
  override def commitEpoch(writer: String, epoch: Long, progress: Long, payload: AnyRef,
      finish: Boolean): CommitOutcome =
    if (keeperHosted) progressKeeper.commitEpoch(writer, epoch, progress, payload, finish)
    else if (durable.isDefined) synchronized {
      if (spec.lateness == StateSpec.FailLate) broadcast(CheckNotLate(name, incarnation, writer, epoch))
      hostCounts = Nil
      val outcome = progressKeeper.commitEpoch(writer, epoch, progress, payload, finish)
      if (outcome.alreadyCommitted) outcome
      else outcome.copy(accepted = hostCounts.map(_.accepted).sum, rejected = hostCounts.map(_.rejected).sum)
    }
    else if (finish) {
      val outcome = commitEpoch(writer, epoch, progress)
      finishWriter(writer)
      outcome.copy(updateProgress = updateProgress)
    } else synchronized {
      if (spec.lateness == StateSpec.FailLate) broadcast(CheckNotLate(name, incarnation, writer, epoch))
      val counts = broadcast(CommitEpoch(name, incarnation, writer, epoch, progress)).map(_.asInstanceOf[Committed])
      progressKeeper.commitEpoch(writer, epoch, progress)
        .copy(accepted = counts.map(_.accepted).sum, rejected = counts.map(_.rejected).sum)
    }

  /** Sizes and counts summed over the hosts; U, F and per-writer progress from the driver. */
  override def metrics: StateMetrics = {
    val own = progressKeeper.metrics
    val parts = broadcast(GetMetrics(name, incarnation)).map(_.asInstanceOf[StateMetrics])
    def sum(f: StateMetrics => Long): Long = parts.map(f).sum
    def sumSeq(f: StateMetrics => IndexedSeq[Long]): IndexedSeq[Long] =
      parts.map(f).filter(_.nonEmpty).reduceOption((a, b) => a.zip(b).map { case (x, y) => x + y }).getOrElse(
        IndexedSeq.empty)
    own.copy(
      keys = sum(_.keys),
      bytesHeld = sum(_.bytesHeld),
      updatesApplied = sum(_.updatesApplied),
      updatesStaged = sum(_.updatesStaged),
      updatesRejected = sum(_.updatesRejected),
      writerCounts = parts.flatMap(_.writerCounts.toSeq).groupBy(_._1).map { case (w, cs) =>
        w -> (cs.map(_._2._1).sum, cs.map(_._2._2).sum)
      },
      rawBytes = sum(_.rawBytes),
      pairs = sum(_.pairs),
      pairsCompacted = sum(_.pairsCompacted),
      stagedBytes = sum(_.stagedBytes),
      rejectedBytes = sum(_.rejectedBytes),
      rejectedDropped = sum(_.rejectedDropped),
      pendingFetches = parts.map(_.pendingFetches).sum,
      partitionBytes = sumSeq(_.partitionBytes),
      partitionKeys = sumSeq(_.partitionKeys)
    )
  }

  override def rejectedUpdates: Seq[RejectedUpdate] =
    broadcast(GetRejected(name, incarnation)).flatMap(_.asInstanceOf[Array[RejectedUpdate]].toSeq)

  /**
   * A durable State whose partitions some lost host owned: they are rebuilt (from the latest snapshot
   * and the changelog after it) on the live host `durable.pickHost` names, while every commit and
   * lifecycle step waits, so the rebuilt partitions end exactly where the other hosts are. Requests
   * for them wait for the new route meanwhile. Does nothing if `lost` owns none of them.
   */
  def recover(lost: HostId): Unit = durable match {
    case Some(d) => synchronized {
        val lostParts = currentRoute.partitionsOf(lost)
        if (lostParts.nonEmpty) {
          moving.writeLock().lock()
          try {
            val started = System.nanoTime()
            val target = d.pickHost(currentRoute, lost)
            // The rebuild replays the step in flight too: its rejections in the moved partitions come from there.
            val rebuilt =
              HostLink.await[Rebuilt](node.link(target).ask(Adopt(spec, incarnation, lostParts.toArray, d.source,
                    rejectedAfter = d.journal.rejectedThroughEvent)), target, name, lostParts)
            stepRejected ++= rebuilt.rejections.sortBy(_._1).map(_._2)
            currentRoute = currentRoute.copy(owners = currentRoute.owners.map(h => if (h == lost) target else h),
              version = currentRoute.version + 1)
            val ms = (System.nanoTime() - started) / 1000000
            movesSoFar = movesSoFar :+ ClusterStateController.Move(lostParts, lost, target, ms, "lost")
            logInfo(s"State $name: partition(s) ${lostParts.mkString(", ")} of lost $lost rebuilt on $target in $ms ms")
          } finally moving.writeLock().unlock()
        }
      }
    case _ => ()
  }

  /** Can its partitions move (not a read-only State the driver's JVM holds whole)? */
  def movable: Boolean = !keeperHosted

  /**
   * Moves `partitions` to `target` while writers, fetches and change streams go on (a live move), one
   * group per current owner. Each group's fence: commits and lifecycle steps of the State wait (this
   * lock) and no route is handed out (`moving`); the old owner stops serving the partitions (requests
   * for them are answered "moved" and sent again on the new route by [[RecoveringStateClient]];
   * asynchronous fetches waiting there too) and hands over their entries, their updates staged for U
   * and their share of uncommitted task batches; the new owner takes them (a host new to the State
   * starts from the keeper's progress, equal to every host's here); the route's version goes up. If
   * the new owner fails, the old one takes them back and the move fails. Partitions already at
   * `target` stay. Returns one [[ClusterStateController.Move]] per group (the fence's length in ms).
   */
  def move(partitions: Seq[Int], target: HostId, reason: String): Seq[ClusterStateController.Move] =
    move(partitions, target, reason, preCopy)

  /**
   * [[move]]; `preCopy`: each group is copied to `target` first, while the State's commits go on
   * (the old owner keeps serving it), in rounds until what a round carries is small or stops
   * shrinking; once small, a last round runs while the State's commits wait (nothing changes any more),
   * so the fence sends almost nothing (see docs/elasticity.md). Without it, or if the pre-copy fails,
   * the fence copies the whole partitions.
   */
  def move(partitions: Seq[Int], target: HostId, reason: String, preCopy: Boolean): Seq[ClusterStateController.Move] =
    moveLock.synchronized {
      if (keeperHosted) throw new SharedStateException(s"State '$name' is open read-only: the driver holds all its " +
        "partitions while it follows its owner's changelog, so they do not move.")
      partitions.foreach(p =>
        if (p < 0 || p >= partitionCount) throw new SharedStateException(
          s"State '$name' has partitions 0 to ${partitionCount - 1}; cannot move partition $p."))
      val route = currentRoute
      partitions.distinct.filter(route.owners(_) != target).groupBy(route.owners(_)).toSeq.sortBy(_._1.executorId).map {
        case (from, group) =>
          val parts = group.sorted
          val last = if (preCopy) copyAhead(from, parts, target) else None
          val m = synchronized {
            // commits wait from here: a last round then leaves the fence nothing the writers changed
            val held = System.nanoTime()
            val copied = last.isDefined && (last.get > ClusterStateController.PreCopyHoldBytes ||
              lastRound(from, parts, target))
            moveFrom(from, parts, target, reason, copied, held)
          }
          // the entries the old owner kept after a pre-copied hand-over go, outside the fence
          if (m.preCopied) endPreCopy(from, parts, moved = true)
          m
      }
    }

  // Outside the fence: the old owner encodes the entries while it serves them, the new owner loads them.
  // The bytes of the last round, or None if the pre-copy failed (the fence copies the whole partitions).
  private def copyAhead(from: HostId, partitions: Seq[Int], target: HostId): Option[Long] = {
    import ClusterStateController.{PreCopyEnoughBytes, PreCopyRounds}
    val started = System.nanoTime()
    // Rounds while the last one carried much (keys change while it is copied), each sending what changed
    // during the one before, until a round is small or no smaller than the one before (the writers change
    // keys as fast as a round copies them: more rounds would not shrink the fence's delta).
    var round = 0
    var bytes = Long.MaxValue
    var shrinking = true
    var total = 0L
    try {
      while (round < PreCopyRounds && bytes > PreCopyEnoughBytes && shrinking) {
        val sent = copyRound(from, partitions, target, again = round > 0)
        round += 1 // tracking runs at the old owner from here on
        shrinking = sent < bytes
        bytes = sent
        total += sent
      }
      logInfo(s"State $name: partition(s) ${partitions.mkString(", ")} pre-copied from $from to $target in " +
        s"${(System.nanoTime() - started) / 1000000} ms ($round round(s), $total bytes, the last $bytes)")
      Some(bytes)
    } catch {
      case NonFatal(e) =>
        if (round > 0) { endPreCopy(target, partitions, moved = false); endPreCopy(from, partitions, moved = false) }
        logWarning(s"State $name: no pre-copy of partition(s) ${partitions.mkString(", ")}; the fence copies them", e)
        None
    }
  }

  // One round: the old owner's entries (the first) or those changed since the previous round, loaded at the
  // new owner. Returns the bytes sent.
  private def copyRound(from: HostId, partitions: Seq[Int], target: HostId, again: Boolean): Long = {
    val snapshots = HostLink.await[Array[Array[Byte]]](
      node.link(from).ask(PreCopy(name, incarnation, partitions.toArray, again)), from, name, partitions)
    HostLink.await[Any](node.link(target).ask(Preload(spec, incarnation, snapshots)), target, name, partitions)
    snapshots.map(_.length.toLong).sum
  }

  /**
   * The writers' short back-pressure (under this lock: commits wait): a last round sends what changed
   * during the previous, small one, and nothing changes after it, so the fence's delta holds only what
   * compaction touched and the staged updates. False if it failed: the pre-copy is undone and the fence
   * copies the whole partitions.
   */
  private def lastRound(from: HostId, partitions: Seq[Int], target: HostId): Boolean = {
    val started = System.nanoTime()
    try {
      val bytes = copyRound(from, partitions, target, again = true)
      logInfo(s"State $name: last pre-copy round of partition(s) ${partitions.mkString(", ")} while commits wait: " +
        s"${(System.nanoTime() - started) / 1000000} ms, $bytes bytes")
      true
    } catch {
      case NonFatal(e) =>
        endPreCopy(target, partitions, moved = false); endPreCopy(from, partitions, moved = false)
        logWarning(
          s"State $name: the last pre-copy round of ${partitions.mkString(", ")} failed; the fence copies them",
          e)
        false
    }
  }

  private def endPreCopy(at: HostId, partitions: Seq[Int], moved: Boolean): Unit =
    try HostLink.await[Any](node.link(at).ask(EndPreCopy(name, incarnation, partitions.toArray, moved)), at, name,
        partitions)
    catch {
      case NonFatal(e) => logWarning(s"State $name: $at did not end the pre-copy of ${partitions.mkString(", ")}", e)
    }

  // The fence; `held`: when commits began to wait for this move (the last pre-copy round, if any, then the fence).
  private def moveFrom(from: HostId, partitions: Seq[Int], target: HostId, reason: String, precopied: Boolean,
      held: Long): ClusterStateController.Move = {
    // A lost host's partitions were rebuilt elsewhere since the pre-copy: nothing moves.
    if (precopied && partitions.exists(currentRoute.owners(_) != from)) {
      endPreCopy(target, partitions, moved = false); endPreCopy(from, partitions, moved = false)
      throw new SharedStateException(s"State '$name': partition(s) ${partitions.mkString(", ")} left $from while " +
        s"they were copied to $target; move them again.")
    }
    moving.writeLock().lock()
    try {
      val started = System.nanoTime()
      val version = currentRoute.version + 1
      val handOver = HostLink.await[PartitionHandOver](
        node.link(from).ask(HandOver(name, incarnation, partitions.toArray, version, precopied)), from, name,
        partitions)
      val handedOver = System.nanoTime()
      def takeOver(at: HostId) = HostLink.await[Any](node.link(at).ask(TakeOver(spec, incarnation, handOver,
            progressKeeper.progressImage, durable.map(_.source), version, precopied)), at, name, partitions)
      try takeOver(target)
      catch {
        case NonFatal(e) =>
          takeOver(from)
          if (precopied) endPreCopy(target, partitions, moved = false)
          throw new SharedStateException(s"State '$name': moving partition(s) ${partitions.mkString(", ")} from " +
              s"$from to $target failed (${e.getMessage}); they stay on $from.", e)
      }
      val moved = partitions.toSet
      if (currentRoute.partitionsOf(from).forall(moved)) retire(from, target)
      currentRoute = currentRoute.copy(
        owners = currentRoute.owners.zipWithIndex.map { case (h, p) => if (moved(p)) target else h },
        version = version)
      val ended = System.nanoTime()
      val ms = (ended - started) / 1000000
      val m = ClusterStateController.Move(partitions, from, target, ms, reason, precopied, (ended - held) / 1000000)
      movesSoFar = movesSoFar :+ m
      logInfo(s"State $name: partition(s) ${partitions.mkString(", ")} moved from $from to $target ($reason) with " +
        s"a $ms ms pause (hand-over ${(handedOver - started) / 1000000} ms, " +
        s"${handOver.snapshots.map(_.length.toLong).sum} bytes; commits held ${m.heldMillis} ms)")
      m
    } finally moving.writeLock().unlock()
  }

  // A host left with no partition gets no more steps: what it counted (applied and rejected updates,
  // per-writer counts, the rejected log) goes to `to`, so the State's metrics and rejected table keep it.
  private def retire(host: HostId, to: HostId): Unit =
    try {
      val m = HostLink.await[StateMetrics](node.link(host).ask(GetMetrics(name, incarnation)), host, name, Nil)
      val r =
        HostLink.await[Array[RejectedUpdate]](node.link(host).ask(GetRejected(name, incarnation)), host, name, Nil)
      HostLink.await[Any](node.link(to).ask(KeepCounts(name, incarnation, m.updatesApplied, m.updatesRejected,
            m.writerCounts, r)), to, name, Nil)
    } catch { case NonFatal(e) => logWarning(s"State $name: $host's counts are not kept in the metrics", e) }

  /** Snapshot rounds of a durable State: each partition encoded by its owner between two commits. */
  private[cluster] def snapshotSource: SnapshotSource = new SnapshotSource {
    override def partitionCount: Int = progressKeeper.partitionCount
    // Hosts take deltas on the snapshot they last stored (see HostSnapshots).
    override def tracksChanges: Boolean = true
    // The owner captures at a commit boundary (commits wait only for that), then encodes with commits flowing.
    override def encode(p: Int, delta: Boolean, parent: Long): EncodedPartition = {
      val asked = System.nanoTime()
      val (owner, token, seq, u, version, began) = ClusterStateController.this.synchronized {
        val began = System.nanoTime()
        val (owner, token) = retryingLost(() => {
          val owner = currentRoute.owners(p)
          (owner,
            HostLink.await[Long](node.link(owner).ask(CaptureForSnapshot(name, incarnation, p)), owner, name, Seq(p)))
        })
        (owner, token, durable.get.journal.lastSeq, progressKeeper.updateProgress, durable.get.journal.lastVersion,
          began)
      }
      val captured = System.nanoTime()
      val inc = incarnation
      val e = HostLink.await[EncodedCapture](
        node.link(owner).ask(EncodeCapture(name, inc, p, token, if (delta) parent else -1L)), owner, name, Seq(p))
      EncodedPartition(
        IndexedSeq(e.bytes),
        seq,
        u,
        version,
        e.delta,
        e.entries,
        lockWaitNanos = began - asked,
        captureNanos = captured - began,
        encodeNanos = System.nanoTime() - captured,
        stored = () =>
          HostLink.await[Any](node.link(owner).ask(CaptureStored(name, inc, p, token, seq)), owner, name, Seq(p))
      )
    }
    override def betweenCommits[T](body: => T): T = ClusterStateController.this.synchronized(body)
    override def checkHealthy(): Unit = durable.foreach(_.journal.checkHealthy())
  }

  private[cluster] def close(): Unit = progressKeeper.close()

  override def incarnation: Long = currentRoute.incarnation

  private def step(message: Lifecycle)(local: State => Unit): Unit =
    if (keeperHosted) synchronized(local(progressKeeper))
    else if (durable.isDefined) synchronized {
      // The journal sends journaled steps to the hosts; the others (readers, repeated steps) go here.
      val before = journaled
      local(progressKeeper)
      if (journaled == before) { broadcast(message); writeRejected() }
    }
    else synchronized { broadcast(message); local(progressKeeper) }

  private var journaled = 0L

  // All hosts at once, then every answer awaited (a failure names the host and its partitions). A
  // durable State's lost host has its partitions rebuilt elsewhere, whose host then answers instead
  // (a lifecycle step was already applied there: the rebuild replays it from the changelog).
  private def broadcast(message: Any): Seq[Any] = {
    val route = currentRoute
    val asked = route.hosts.map(h => h -> node.link(h).ask(message))
    val answers = asked.map { case (h, f) =>
      try Right(HostLink.await[Any](f, h, name, route.partitionsOf(h)))
      catch { case e: HostUnreachableException if durable.isDefined && !HostLink.answers(node.link(h)) => Left(e) }
    }
    if (durable.isDefined) answers.foreach {
      case Right(Committed(_, _, rejections)) => stepRejected ++= rejections
      case Right(StepRejected(rejections)) => stepRejected ++= rejections
      case _ => ()
    }
    val lost = answers.collect { case Left(e) => e }
    if (lost.isEmpty) answers.collect { case Right(a) => a }
    else {
      lost.foreach(e => {
        logWarning(s"State $name: ${e.host} did not answer; rebuilding its partitions", e); recover(e.host)
      })
      message match {
        case _: Lifecycle => answers.collect { case Right(a) => a }
        case _ => broadcast(message) // reads: ask the new owners too
      }
    }
  }

  // The step's rejections go to the rejected table, tagged with its journal event (see DeltaJournal).
  private def writeRejected(): Unit = if (stepRejected.nonEmpty) {
    val rejected = stepRejected.toVector
    stepRejected.clear()
    durable.get.journal.updatesRejected(rejected)
  }

  private def retryingLost[T](body: () => T): T =
    try body()
    catch {
      case e: HostUnreachableException if durable.isDefined && !HostLink.answers(node.link(e.host)) =>
        recover(e.host); body()
    }

  /** The keeper's journal: the Delta changelog first, then every host, then (on return) the keeper applies. */
  private final class ClusterJournal(delta: DeltaJournal) extends StateJournal {
    override def writerRegistered(writer: String, frontier: Long): Unit = {
      delta.writerRegistered(writer, frontier); journaled += 1; broadcast(RegisterWriter(name, incarnation, writer))
      writeRejected()
    }
    override def epochCommitting(c: JournalCommit): Unit = {
      delta.epochCommitting(c); journaled += 1
      hostCounts =
        broadcast(CommitEpoch(name, incarnation, c.writer, c.epoch, c.writerProgress)).map(_.asInstanceOf[Committed])
      if (c.finish) broadcast(FinishWriter(name, incarnation, c.writer))
      writeRejected()
    }
    override def writerFinished(writer: String): Unit = {
      delta.writerFinished(writer); journaled += 1; broadcast(FinishWriter(name, incarnation, writer))
      writeRejected()
    }
    override def writerDeregistered(writer: String): Unit = {
      delta.writerDeregistered(writer); journaled += 1; broadcast(DeregisterWriter(name, incarnation, writer))
      writeRejected()
    }
  }
}

private[sharedstate] object ClusterStateController {

  /** How long a request waits for partitions being rebuilt on another host. */
  val RouteWaitSeconds = 300L

  /**
   * A live move's pre-copy rounds at most, and the size of a round after which no further round is worth
   * it. If the last round carried at most `PreCopyHoldBytes`, one more round runs while commits wait
   * (about as long as that round took); else the fence sends what changed during it.
   */
  val PreCopyRounds = 8
  val PreCopyEnoughBytes: Long = 64L * 1024
  val PreCopyHoldBytes: Long = 1024L * 1024

  /**
   * A durable cluster State: its journal (the Delta changelog), where hosts rebuild partitions from,
   * and which live host takes over the partitions of a lost one.
   */
  final case class Durable(journal: DeltaJournal, source: PartitionSource, pickHost: (StateRoute, HostId) => HostId)

  /**
   * Partitions that moved from `from` to `to`: `reason` `lost` (rebuilt from the tables after `from`
   * was lost; `millis` the rebuild), else a live move (`move`, `rebalance`, `executor added`,
   * `decommission`; `millis` the hand-over's fence, while the State's commits wait and no route is
   * handed out). `preCopied`: the fence sent a delta after a pre-copy; `heldMillis`: how long the
   * State's commits waited for the move (the last pre-copy round, then the fence).
   */
  final case class Move(partitions: Seq[Int], from: HostId, to: HostId, millis: Long, reason: String,
      preCopied: Boolean = false, heldMillis: Long = 0L)
}
