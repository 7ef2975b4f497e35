package io.sharedstate.spark.distributed

import io.sharedstate.core.{FetchAnswer, SharedStateException, State, StateSpec, UpdateBatch}
import io.sharedstate.core.fetch.FetchRequest
import io.sharedstate.spark.distributed.Messages._
import java.util.concurrent.ConcurrentHashMap
import org.apache.spark.sharedstate.RpcBridge
import scala.collection.immutable.BitSet
import scala.jdk.CollectionConverters._

/**
 * The State partitions one JVM hosts: per State, a core [[State]] of which this host holds the
 * partitions the coordinator assigned to it (the others stay empty). The coordinator sends every host
 * of a State the same lifecycle steps in the same order, so each host's U equals the driver's.
 * Requests name the State's incarnation and stay inside the host's partitions, so a stale or
 * misrouted request fails instead of answering from an empty partition.
 */
final class HostService(val id: HostId, onDrop: String => Unit = _ => ()) extends RpcBridge.Handler {
  import HostService.Hosted
  private val hosted = new ConcurrentHashMap[String, Hosted]()

  override def handle(message: Any): Any = message match {
    case Host(spec, incarnation, partitions) => host(spec, incarnation, partitions); true
    case Drop(state) => drop(state); true
    case m: Lifecycle => lifecycle(m)
    case Stage(state, inc, writer, epoch, task, keys, times, values, rejected) =>
      val batch = new UpdateBatch
      var i = 0
      while (i < keys.length) { batch.add(keys(i), times(i), values(i)); i += 1 }
      rejected.foreach(batch.reject)
      stage(state, inc, writer, epoch, task, batch); true
    case Fetch(state, inc, requests) => fetch(state, inc, requests)
    case ScanAsOf(state, inc, partition, asOf) => scanAsOf(state, inc, partition, asOf)
    case FetchAsync(state, inc, request) => fetchAsync(state, inc, request)
    case GetChanges(state, inc, partition, from, until) => changes(state, inc, partition, from, until)
    case m: HostFeedMessages.HostFeedRequest =>
      val h = hostedState(m.state, m.incarnation); HostFeeds.serve(h.state, h.partitions.toSeq, m)
    case GetHostProgress(state, inc) => hostedState(state, inc).state.updateProgress
    case GetRejected(state, inc) => hostedState(state, inc).state.rejectedUpdates.toArray
    case GetMetrics(state, inc) => hostedState(state, inc).state.metrics
    case other => throw new SharedStateException(s"sharedstate host $id: unknown message ${other.getClass.getName}.")
  }

  def stage(state: String, incarnation: Long, writer: String, epoch: Long, task: Int, batch: UpdateBatch): Unit = {
    val h = hostedState(state, incarnation)
    var i = 0
    while (i < batch.size) { h.check(h.state.partitionOf(new io.sharedstate.core.Key(batch.keyAt(i))).id); i += 1 }
    h.state.stage(writer, epoch, task, batch)
  }

  def fetch(state: String, incarnation: Long, requests: Array[FetchRequest]): Array[FetchAnswer] = {
    val h = hostedState(state, incarnation)
    requests.map { r => h.check(r.key.partition(h.state.partitionCount)); h.state.fetch(r) }
  }

  def fetchAsync(state: String, incarnation: Long, request: FetchRequest): java.util.concurrent.CompletableFuture[FetchAnswer] = {
    val h = hostedState(state, incarnation)
    h.check(request.key.partition(h.state.partitionCount))
    h.state.fetchAsync(request)
  }

  def changes(state: String, incarnation: Long, partition: Int, from: Long, until: Long): Array[io.sharedstate.core.Change] = {
    val h = hostedState(state, incarnation)
    h.check(partition)
    h.state.changes(partition, from, until)
  }

  def hostProgress(state: String, incarnation: Long): Long = hostedState(state, incarnation).state.updateProgress

  def scanAsOf(state: String, incarnation: Long, partition: Int, asOf: Long): StoredPairs = {
    val h = hostedState(state, incarnation)
    h.check(partition)
    AsOfPairs.of(h.state.partition(partition), asOf)
  }

  def hostedNames: Seq[String] = hosted.keySet.asScala.toSeq.sorted

  private def host(spec: StateSpec, incarnation: Long, partitions: Array[Int]): Unit =
    hosted.compute(spec.name, (_, old) => {
      if (old != null && old.incarnation == incarnation) old
      else {
        if (old != null) old.state.close()
        Hosted(incarnation, new State(spec), BitSet(partitions.toIndexedSeq: _*), id)
      }
    })

  private def drop(state: String): Unit = {
    val old = hosted.remove(state)
    if (old != null) old.state.close()
    onDrop(state)
  }

  private def lifecycle(m: Lifecycle): Any = {
    val s = hostedState(m.state, m.incarnation).state
    m match {
      case RegisterWriter(_, _, w) => s.registerWriter(w); true
      case CheckNotLate(_, _, w, e) => s.checkNotLate(w, e); true
      case CommitEpoch(_, _, w, e, p) => val o = s.commitEpoch(w, e, p); Committed(o.accepted, o.rejected)
      case AbortEpoch(_, _, w, e) => s.abortEpoch(w, e); true
      case FinishWriter(_, _, w) => s.finishWriter(w); true
      case DeregisterWriter(_, _, w) => s.deregisterWriter(w); true
      case RegisterReader(_, _, r) => s.registerReader(r); true
      case ReportFetchProgress(_, _, r, p) => s.reportFetchProgress(r, p); true
      case FinishReader(_, _, r) => s.finishReader(r); true
      case DeregisterReader(_, _, r) => s.deregisterReader(r); true
    }
  }

  private def hostedState(state: String, incarnation: Long): Hosted = {
    val h = hosted.get(state)
    if (h == null || h.incarnation != incarnation) throw new SharedStateException(
      s"State '$state' is not hosted by $id" + (if (h == null) "" else " in this incarnation") +
        ": it was dropped (or re-created) since this request was routed, or this executor replaced a lost one. " +
        "Lost State partitions are not rebuilt yet; re-create the State or restart the application.")
    h
  }
}

object HostService {
  /** The endpoint name of a host's service (on the host's own RPC environment). */
  val Endpoint = "sharedstate-host"

  private final case class Hosted(incarnation: Long, state: State, partitions: BitSet, host: HostId) {
    def check(partition: Int): Unit = if (!partitions.contains(partition)) throw new SharedStateException(
      s"State '${state.name}' partition $partition is not hosted by $host (it hosts ${partitions.mkString(", ")}); " +
        "the request was misrouted.")
  }
}
