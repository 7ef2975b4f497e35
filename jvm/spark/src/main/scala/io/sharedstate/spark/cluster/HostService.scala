package io.sharedstate.spark.cluster

import io.sharedstate.spark.durable.PartitionSource
import io.sharedstate.spark.rows.{AsOfPairs, StoredPairs}

import io.sharedstate.core.{
  FetchAnswer,
  PartitionHandOver,
  ProgressImage,
  RejectedUpdate,
  SharedStateException,
  State,
  StateMetrics,
  StateSpec,
  UpdateBatch
}
import io.sharedstate.core.fetch.FetchRequest
import Messages._
import java.util.concurrent.{CompletableFuture, ConcurrentHashMap}
import java.util.concurrent.locks.ReentrantReadWriteLock
import org.apache.spark.internal.Logging
import org.apache.spark.sharedstate.RpcBridge
import scala.collection.immutable.BitSet
import scala.jdk.CollectionConverters._

/**
 * The State partitions one JVM hosts: per State, a core [[State]] of which this host holds the
 * partitions the coordinator assigned to it (the others stay empty). The coordinator sends every host
 * of a State the same lifecycle steps in the same order, so each host's U equals the driver's.
 * Requests name the State's incarnation and stay inside the host's partitions, so a stale or
 * misrouted request fails instead of answering from an empty partition.
 *
 * A durable State's partitions are rebuilt from its tables when hosted (after a driver restart) or
 * adopted from a lost host (see [[Adopted]]).
 */
private[sharedstate] final class HostService(val id: HostId, onDrop: String => Unit = _ => ())
    extends RpcBridge.Handler with Logging {
  import HostService.Hosted
  private val hosted = new ConcurrentHashMap[String, Hosted]()
  // A live move's pre-copy for a State this host serves no partition of yet: (incarnation, State).
  private val preloaded = new ConcurrentHashMap[String, (Long, State)]()

  override def handle(message: Any): Any = message match {
    case Host(spec, incarnation, partitions, source, after) =>
      val rejections = host(spec, incarnation, partitions, source)
      if (source.isEmpty) true else Rebuilt(rejections.filter(_._1 > after).toArray)
    case Adopt(spec, incarnation, partitions, source, after) =>
      Rebuilt(adopt(spec, incarnation, partitions, source).filter(_._1 > after).toArray)
    case Ping => true
    case EncodePartition(state, inc, partition) =>
      val h = hostedState(state, inc); h.check(partition); h.state.snapshotPartition(partition)
    case CaptureForSnapshot(state, inc, partition) =>
      val h = hostedState(state, inc); h.check(partition); h.snapshots.capture(partition)
    case EncodeCapture(state, inc, partition, token, parent) =>
      hostedState(state, inc).snapshots.encode(partition, token, parent)
    case CaptureStored(state, inc, partition, token, id) =>
      hostedState(state, inc).snapshots.stored(partition, token, id); true
    case Drop(state) => drop(state); true
    case KeepCounts(state, inc, applied, rejected, writerCounts, log) =>
      hostedState(state, inc).adopted.keep(applied, rejected, writerCounts, log); true
    case HandOver(state, inc, partitions, version, precopied) => handOver(state, inc, partitions, version, precopied)
    case TakeOver(spec, inc, handOver, progress, source, version, precopied) =>
      takeOver(spec, inc, handOver, progress, source, version, precopied); true
    case PreCopy(state, inc, partitions, again) =>
      val h = hostedState(state, inc)
      h.serve(partitions.foreach(h.check))
      if (again) h.state.preCopyAgain(partitions.toSeq) else h.state.preCopy(partitions.toSeq)
    case Preload(spec, inc, snapshots) => preload(spec, inc, snapshots); true
    case EndPreCopy(state, inc, partitions, moved) => endPreCopy(state, inc, partitions, moved); true
    case m: Lifecycle => lifecycle(m)
    case Stage(state, inc, writer, epoch, task, keys, times, values, rejected, version) =>
      val batch = new UpdateBatch
      var i = 0
      while (i < keys.length) { batch.add(keys(i), times(i), values(i)); i += 1 }
      rejected.foreach(batch.reject)
      stage(state, inc, writer, epoch, task, batch, version); true
    case Fetch(state, inc, requests) => fetch(state, inc, requests)
    case ScanAsOf(state, inc, partition, asOf) => scanAsOf(state, inc, partition, asOf)
    case FetchAsync(state, inc, request) => fetchAsync(state, inc, request)
    case GetChanges(state, inc, partition, from, until) => changes(state, inc, partition, from, until)
    case m: HostFeedMessages.HostFeedRequest =>
      val h = hostedState(m.state, m.incarnation)
      // An open or a read of the partitions' pairs is held off by a hand-over; a wait for the frontier must not be.
      m match {
        case _: HostFeedMessages.ReadHostFeed | _: HostFeedMessages.OpenHostFeed =>
          h.serve(HostFeeds.serve(h.state, h.ownership, m))
        case _ => HostFeeds.serve(h.state, h.ownership, m)
      }
    case GetHostProgress(state, inc) => hostedState(state, inc).state.updateProgress
    case GetRejected(state, inc) =>
      val h = hostedState(state, inc); (h.state.rejectedUpdates ++ h.adopted.rejected).toArray
    case GetMetrics(state, inc) => val h = hostedState(state, inc); h.adopted.addTo(h.state.metrics)
    case other => throw new SharedStateException(s"sharedstate host $id: unknown message ${other.getClass.getName}.")
  }

  def stage(state: String, incarnation: Long, writer: String, epoch: Long, task: Int, batch: UpdateBatch,
      routeVersion: Long = 0L): Unit = {
    val h = hostedState(state, incarnation)
    h.serve {
      // Split by a route older than a move this host took part in: its share may be another one now
      // (a task's batch here holds a moved partition's updates), so the task splits it again.
      if (routeVersion < h.routeVersion) throw new PartitionMovedException(state, -1, id.toString)
      var i = 0
      while (i < batch.size) { h.check(h.state.partitionOf(new io.sharedstate.core.Key(batch.keyAt(i))).id); i += 1 }
      h.state.stage(writer, epoch, task, batch)
    }
  }

  def fetch(state: String, incarnation: Long, requests: Array[FetchRequest]): Array[FetchAnswer] = {
    val h = hostedState(state, incarnation)
    h.serve {
      requests.foreach(r => h.check(r.key.partition(h.state.partitionCount)))
      h.state.fetch(requests)
    }
  }

  def fetchAsync(
      state: String, incarnation: Long, request: FetchRequest): java.util.concurrent.CompletableFuture[FetchAnswer] = {
    val h = hostedState(state, incarnation)
    val partition = request.key.partition(h.state.partitionCount)
    h.serve {
      h.check(partition)
      h.waitFor(partition, h.state.fetchAsync(request))
    }
  }

  def changes(
      state: String, incarnation: Long, partition: Int, from: Long, until: Long): Array[io.sharedstate.core.Change] = {
    val h = hostedState(state, incarnation)
    h.serve { h.check(partition); h.state.changes(partition, from, until) }
  }

  def hostProgress(state: String, incarnation: Long): Long = hostedState(state, incarnation).state.updateProgress

  def scanAsOf(state: String, incarnation: Long, partition: Int, asOf: Long): StoredPairs = {
    val h = hostedState(state, incarnation)
    h.serve { h.check(partition); AsOfPairs.of(h.state.partition(partition), asOf) }
  }

  def hostedNames: Seq[String] = hosted.keySet.asScala.toSeq.sorted

  /**
   * Hosts every partition of `state`, a State of this JVM that something else keeps up to date (a
   * read-only durable State following its owner's changelog on the driver): requests reach it as
   * any hosted State's; lifecycle steps go to it directly, not through here.
   */
  def hostExisting(incarnation: Long, state: State): Unit = {
    val old = hosted.put(state.name, new Hosted(incarnation, state, BitSet(0 until state.partitionCount: _*), id, None))
    if (old != null && (old.state ne state)) old.state.close()
  }

  // What the rebuild rejected (none when the State was hosted already in this incarnation).
  private def host(spec: StateSpec, incarnation: Long, partitions: Array[Int], source: Option[PartitionSource])
      : Seq[(Long, RejectedUpdate)] = {
    var rejections: Seq[(Long, RejectedUpdate)] = Nil
    hosted.compute(
      spec.name,
      (_, old) => {
        if (old != null && old.incarnation == incarnation && old.partitions.nonEmpty) old
        else {
          if (old != null) old.state.close()
          val state = new State(spec)
          source.foreach(s => rejections = rebuild(state, partitions, s))
          new Hosted(incarnation, state, BitSet(partitions.toIndexedSeq: _*), id, source)
        }
      }
    )
    rejections
  }

  // Adopted partitions are rebuilt in a State of their own (its progress replayed from the journal,
  // equal to this host's, since the coordinator holds commits meanwhile), then moved into the live one.
  private def adopt(spec: StateSpec, incarnation: Long, partitions: Array[Int], source: PartitionSource)
      : Seq[(Long, RejectedUpdate)] = {
    val current = hosted.get(spec.name)
    val rejections = if (current == null || current.incarnation != incarnation || current.partitions.isEmpty)
      host(spec, incarnation, partitions, Some(source))
    else {
      val rebuilt = new State(spec)
      val rejections = rebuild(rebuilt, partitions, source)
      partitions.foreach { p =>
        current.state.restorePartition(io.sharedstate.core.codec.SnapshotCodec.decode(rebuilt.snapshotPartition(p)))
      }
      current.adopted.add(rebuilt, current.state, partitions)
      rebuilt.close()
      current.partitions = current.partitions ++ partitions
      rejections
    }
    // What tasks staged for these partitions before they moved was staged at the lost host.
    hosted.get(spec.name).restageFirstCommits()
    rejections
  }

  /**
   * A live move at the old owner (the coordinator holds the State's steps meanwhile): no request for
   * `partitions` is served from here on, those waiting for U are answered "moved", and the partitions
   * with their share of uncommitted task batches leave this host's State.
   */
  private def handOver(state: String, incarnation: Long, partitions: Array[Int], version: Long,
      precopied: Boolean): PartitionHandOver = {
    val h = hostedState(state, incarnation)
    h.exclusively {
      h.routeVersion = math.max(h.routeVersion, version)
      partitions.foreach(h.check)
      h.partitions = h.partitions -- partitions
      h.movedAway = h.movedAway ++ partitions
      h.handedOverAt = h.handedOverAt ++ partitions.map(_ -> version)
      h.failWaiting(partitions.toSet)
      val out = h.state.handOver(partitions.toSeq, precopied)
      logInfo(s"State $state: partition(s) ${partitions.mkString(", ")} handed over by $id")
      out
    }
  }

  /**
   * A live move's pre-copy at the new owner: the entries go into the live State if this host serves
   * some of its partitions (they stay unserved until the take-over), else into a State of their own
   * that the take-over starts from (a host with none of the partitions gets no steps meanwhile).
   */
  private def preload(spec: StateSpec, incarnation: Long, snapshots: Array[Array[Byte]]): Unit = {
    val current = hosted.get(spec.name)
    if (current != null && current.incarnation == incarnation && current.partitions.nonEmpty) {
      current.state.preload(snapshots.toSeq)
    } else {
      // a further round goes onto the earlier rounds' copy (an older incarnation's is dropped)
      val state = preloaded.compute(spec.name,
        (_, old) =>
          if (old != null && old._1 == incarnation) old
          else { if (old != null) old._2.close(); incarnation -> new State(spec) })._2
      state.preload(snapshots.toSeq)
    }
  }

  private def endPreCopy(state: String, incarnation: Long, partitions: Array[Int], moved: Boolean): Unit = {
    Option(preloaded.remove(state)).foreach(_._2.close())
    val h = hosted.get(state)
    if (h != null && h.incarnation == incarnation) {
      val here = partitions.filter(h.partitions.contains)
      val away = partitions.filterNot(h.partitions.contains)
      if (!moved) h.state.cancelPreCopy(here.toSeq)
      h.state.release(away.toSeq) // kept by a pre-copied hand-over, or preloaded for a move that failed
    }
  }

  /** A live move at the new owner (or back at the old one, should the new one have failed). */
  private def takeOver(spec: StateSpec, incarnation: Long, handOver: PartitionHandOver, progress: ProgressImage,
      source: Option[PartitionSource], version: Long, precopied: Boolean): Unit = {
    val current = hosted.get(spec.name)
    val fresh = Option(preloaded.remove(spec.name)).flatMap { case (inc, s) =>
      if (inc == incarnation && precopied) Some(s) else { s.close(); None }
    }
    // A host that held none of the State's partitions got no steps meanwhile: it starts afresh (from the
    // pre-copy loaded for it, if any). The delta of a pre-copied move goes onto what is here otherwise.
    val inPlace = current != null && current.incarnation == incarnation &&
      (current.partitions.nonEmpty || (precopied && fresh.isEmpty))
    if (precopied && !inPlace && fresh.isEmpty) throw new SharedStateException(
      s"State '${spec.name}': ${id} has no pre-copy of partition(s) ${handOver.partitions.mkString(", ")}.")
    if (inPlace) current.exclusively {
      current.routeVersion = math.max(current.routeVersion, version)
      current.state.takeOver(handOver)
      current.partitions = current.partitions ++ handOver.partitions
      current.movedAway = current.movedAway -- handOver.partitions
    }
    else {
      if (current != null) current.state.close()
      val state = fresh.getOrElse(new State(spec))
      state.restoreProgress(progress)
      state.takeOver(handOver)
      val h = new Hosted(incarnation, state, BitSet(handOver.partitions.toIndexedSeq: _*), id, source)
      h.routeVersion = version
      // What it handed over before still answers "moved" (a task may hold a route that old).
      if (current != null && current.incarnation == incarnation) h.movedAway = current.movedAway -- handOver.partitions
      hosted.put(spec.name, h)
    }
    logInfo(s"State ${spec.name}: partition(s) ${handOver.partitions.mkString(", ")} taken over by $id")
  }

  private def rebuild(state: State, partitions: Array[Int], source: PartitionSource): Seq[(Long, RejectedUpdate)] = {
    val started = System.nanoTime()
    val rejections = source.rebuild(state, partitions.toSet)
    logInfo(
      s"State ${state.name}: partition(s) ${partitions.mkString(", ")} rebuilt on $id from ${source.changelogPath} " +
        s"in ${(System.nanoTime() - started) / 1000000} ms")
    rejections
  }

  private def drop(state: String): Unit = {
    val old = hosted.remove(state)
    if (old != null) old.state.close()
    Option(preloaded.remove(state)).foreach(_._2.close())
    onDrop(state)
  }

  // A durable State's host hands back what the step rejected (the driver writes the rejected table).
  private def lifecycle(m: Lifecycle): Any = {
    val h = hostedState(m.state, m.incarnation)
    val s = h.state
    val answer = m match {
      case RegisterWriter(_, _, w) => s.registerWriter(w); true
      case CheckNotLate(_, _, w, e) => s.checkNotLate(w, e); true
      case CommitEpoch(_, _, w, e, p) =>
        h.restageIfNeeded(w, e)
        val o = s.commitEpoch(w, e, p); Committed(o.accepted, o.rejected)
      case AbortEpoch(_, _, w, e) => s.abortEpoch(w, e); true
      case FinishWriter(_, _, w) => s.finishWriter(w); true
      case PauseWriter(_, _, w) => s.pauseWriter(w); true
      case DeregisterWriter(_, _, w) => s.deregisterWriter(w); true
      case RegisterReader(_, _, r) => s.registerReader(r); true
      case ReportFetchProgress(_, _, r, p) => s.reportFetchProgress(r, p); true
      case FinishReader(_, _, r) => s.finishReader(r); true
      case DeregisterReader(_, _, r) => s.deregisterReader(r); true
    }
    val rejected = h.rejections.map(_.drain()).getOrElse(Array.empty[RejectedUpdate])
    answer match {
      case c: Committed => c.copy(rejections = rejected)
      case other => if (rejected.isEmpty) other else StepRejected(rejected)
    }
  }

  private def hostedState(state: String, incarnation: Long): Hosted = {
    val h = hosted.get(state)
    if (h == null || h.incarnation != incarnation) throw new SharedStateException(
      s"State '$state' is not hosted by $id" + (if (h == null) "" else " in this incarnation") +
        ": it was dropped (or re-created) since this request was routed, or this executor replaced a lost one " +
        "(an in-memory State's lost partitions are not rebuilt: re-create the State or restart the application).")
    h
  }
}

private[sharedstate] object HostService {

  /** The endpoint name of a host's service (on the host's own RPC environment). */
  val Endpoint = "sharedstate-host"

  private final class Hosted(val incarnation: Long, val state: State, @volatile var partitions: BitSet, host: HostId,
      source: Option[PartitionSource]) {
    val adopted = new Adopted
    val snapshots = new HostSnapshots(state)

    /** A durable State's host collects what each step rejects (see [[StepRejections]]). */
    val rejections: Option[StepRejections] = source.map { _ =>
      val j = new StepRejections
      state.attachJournal(j)
      j
    }
    @volatile private var restage = false
    // Requests hold it shared while they check and use their partitions; a hand-over holds it alone.
    private val serving = new ReentrantReadWriteLock()

    /** Partitions this host handed to another (requests for them are answered "moved"). */
    @volatile var movedAway: BitSet = BitSet.empty

    /** The route version of the last move this host took part in: stages split by an older route are refused. */
    @volatile var routeVersion: Long = 0L

    /** Per partition this host handed over, the route version of its last hand-over (change feeds, see HostFeeds). */
    @volatile var handedOverAt: Map[Int, Long] = Map.empty

    def ownership: HostFeeds.Ownership = HostFeeds.Ownership(partitions.toSeq, movedAway, handedOverAt, routeVersion)
    // Asynchronous fetches waiting for U here, by partition: a hand-over answers them "moved".
    private val waiting = new ConcurrentHashMap[CompletableFuture[FetchAnswer], Integer]()

    def serve[T](body: => T): T = {
      serving.readLock().lock();
      try body
      finally serving.readLock().unlock()
    }
    def exclusively[T](body: => T): T = {
      serving.writeLock().lock();
      try body
      finally serving.writeLock().unlock()
    }

    def waitFor(partition: Int, answer: CompletableFuture[FetchAnswer]): CompletableFuture[FetchAnswer] =
      if (answer.isDone) answer
      else {
        val out = new CompletableFuture[FetchAnswer]()
        waiting.put(out, partition)
        answer.whenComplete { (a: FetchAnswer, e: Throwable) =>
          waiting.remove(out)
          if (e == null) out.complete(a) else out.completeExceptionally(e)
        }
        out
      }

    def failWaiting(partitions: Set[Int]): Unit = waiting.forEach { (f, p) =>
      if (partitions(p.intValue)) {
        waiting.remove(f); f.completeExceptionally(new PartitionMovedException(state.name, p, host.toString))
      }
    }
    private val restaged = ConcurrentHashMap.newKeySet[String]()

    def check(partition: Int): Unit = if (!partitions.contains(partition)) {
      if (movedAway.contains(partition)) throw new PartitionMovedException(state.name, partition, host.toString)
      throw new SharedStateException(
        s"State '${state.name}' partition $partition is not hosted by $host (it hosts ${partitions.mkString(", ")}); " +
          "the request was misrouted.")
    }

    def restageFirstCommits(): Unit = { restaged.clear(); restage = true }

    /**
     * After an adoption, each writer's next epoch is staged again from the changelog (the coordinator
     * committed it there before sending the commit): the tasks that ran before the move staged their
     * updates of the adopted partitions at the lost host. Each task's batch replaces its earlier one.
     */
    def restageIfNeeded(writer: String, epoch: Long): Unit =
      if (restage && restaged.add(writer) && epoch > state.lastCommittedEpoch(writer)) source.foreach { s =>
        s.epochTasks(state.partitionCount, partitions.toSeq, writer, epoch).foreach { case (task, batch) =>
          state.stage(writer, epoch, task, batch)
        }
      }
  }

  /**
   * What the adopted partitions' rebuild counted that the live State's own counters do not hold: the
   * rejected updates, applied counts and per-writer counts the lost host had for them.
   */
  private final class Adopted {
    // (rejected updates the rebuild's log kept, applied, per-writer counts, every rejected update counted)
    @volatile private var extra =
      (Vector.empty[io.sharedstate.core.RejectedUpdate], 0L, Map.empty[String, (Long, Long)], 0L)

    def rejected: Seq[io.sharedstate.core.RejectedUpdate] = extra._1

    def add(rebuilt: State, live: State, partitions: Array[Int]): Unit = synchronized {
      val applied = partitions.map(p => rebuilt.partition(p).updatesApplied - live.partition(p).updatesApplied).sum
      val counts = rebuilt.metrics.writerCounts
      val (r, a, w, n) = extra
      extra = (r ++ rebuilt.rejectedUpdates, a + applied,
        (w.keySet ++ counts.keySet).map { k =>
          val (x1, y1) = w.getOrElse(k, (0L, 0L)); val (x2, y2) = counts.getOrElse(k, (0L, 0L)); k -> (x1 + x2, y1 + y2)
        }.toMap, n + rebuilt.metrics.updatesRejected)
    }

    /** Counts of a host that no longer serves the State (see Messages.KeepCounts). */
    def keep(applied: Long, rejectedCount: Long, counts: Map[String, (Long, Long)],
        log: Array[io.sharedstate.core.RejectedUpdate]): Unit = synchronized {
      val (r, a, w, n) = extra
      extra = (r ++ log, a + applied,
        (w.keySet ++ counts.keySet).map { k =>
          val (x1, y1) = w.getOrElse(k, (0L, 0L)); val (x2, y2) = counts.getOrElse(k, (0L, 0L)); k -> (x1 + x2, y1 + y2)
        }.toMap, n + rejectedCount)
    }

    def addTo(m: StateMetrics): StateMetrics = {
      val (r, a, w, n) = extra
      if (r.isEmpty && a == 0L && w.isEmpty && n == 0L) m
      else m.copy(
        updatesApplied = m.updatesApplied + a,
        updatesRejected = m.updatesRejected + n,
        writerCounts = (m.writerCounts.keySet ++ w.keySet).map { k =>
          val (x1, y1) = m.writerCounts.getOrElse(k, (0L, 0L)); val (x2, y2) = w.getOrElse(k, (0L, 0L));
          k -> (x1 + x2, y1 + y2)
        }.toMap
      )
    }
  }
}
