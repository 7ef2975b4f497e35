package io.sharedstate.spark.cluster

import io.sharedstate.spark.durable.PartitionSource

import io.sharedstate.core.{PartitionHandOver, ProgressImage, RejectedUpdate, StateSpec}
import io.sharedstate.core.fetch.FetchRequest

/** The RPC messages between the driver's coordinator and the hosts (Java-serialised by Spark's RPC). */
private[sharedstate] object Messages {
  // ---- to the coordinator (driver) ----
  final case class RegisterHost(host: HostId)
  final case class GetRoute(state: String)
  final case class GetUpdateProgress(state: String)

  /** Registers `reader` on the State unless it is registered (a task of a continuous fetch join). */
  final case class EnsureReader(state: String, reader: String)
  final case class GetReaderProgress(state: String, reader: String)

  /**
   * A task could not reach `host` for State `state`: the coordinator checks it, and if it is gone,
   * has its partitions rebuilt elsewhere (durable States) before answering; the task then retries.
   */
  final case class HostUnreachable(state: String, host: HostId)

  /** A question of a higher layer that only the driver can answer (see [[DriverRequest]]). */
  final case class AskDriver(request: DriverRequest[_])

  // ---- to a host: hosting and lifecycle (sent by the coordinator, in one order to every host) ----
  /**
   * Hosts `partitions`; with a source (a durable State) they are first rebuilt from its tables, and the
   * answer is [[Rebuilt]] with what the replay rejected in journal events above `rejectedAfter`.
   */
  final case class Host(spec: StateSpec, incarnation: Long, partitions: Array[Int],
      source: Option[PartitionSource] = None,
      rejectedAfter: Long = Long.MaxValue)

  /**
   * Takes over `partitions` of a lost host: rebuilt from the tables up to the journal's end (the
   * coordinator holds every commit meanwhile) and added to what the host serves. Answered with
   * [[Rebuilt]]: what the rebuild rejected in journal events above `rejectedAfter` (the events whose
   * rejections are not in the rejected table yet: the lost host's share of the step in flight).
   */
  final case class Adopt(spec: StateSpec, incarnation: Long, partitions: Array[Int], source: PartitionSource,
      rejectedAfter: Long = Long.MaxValue)

  /**
   * A live move, at the old owner, inside the coordinator's fence: it stops serving `partitions`
   * (requests for them are answered with [[PartitionMovedException]], asynchronous fetches waiting
   * for them too) and hands them over: answered with the core PartitionHandOver.
   */
  final case class HandOver(state: String, incarnation: Long, partitions: Array[Int], routeVersion: Long,
      precopied: Boolean = false)

  /**
   * A live move's pre-copy, at the old owner, before the fence: the partitions' applied entries as
   * full snapshots (core State.preCopy), taken while it keeps serving them; their changed keys are
   * tracked from here on, so the [[HandOver]] (`precopied`) sends only what changed since. `again`:
   * a further round, the entries of the keys changed since the previous one (core State.preCopyAgain).
   */
  final case class PreCopy(state: String, incarnation: Long, partitions: Array[Int], again: Boolean = false)

  /** The pre-copy, at the new owner, before the fence: it loads the entries into partitions it does not serve yet. */
  final case class Preload(spec: StateSpec, incarnation: Long, snapshots: Array[Array[Byte]])

  /**
   * The end of a pre-copy: at the old owner, tracking stops (the move did not happen) or the entries
   * it kept after a pre-copied hand-over are forgotten (it did); at the new owner, what [[Preload]]
   * loaded is forgotten (it did not).
   */
  final case class EndPreCopy(state: String, incarnation: Long, partitions: Array[Int], moved: Boolean)

  /**
   * A live move, at the new owner: it serves the partitions handed over from now on. A host new to
   * the State starts it from `progress` (the coordinator's, equal to every host's inside the fence);
   * `source`: a durable State's tables (the host hands what steps reject to the driver). `precopied`:
   * the snapshots are deltas onto what [[Preload]] loaded here (or, back at the old owner after a
   * failed take-over, onto the entries it kept).
   */
  final case class TakeOver(spec: StateSpec, incarnation: Long, handOver: PartitionHandOver, progress: ProgressImage,
      source: Option[PartitionSource], routeVersion: Long, precopied: Boolean = false)

  /**
   * What a host left with none of the State's partitions counted (applied and rejected updates,
   * per-writer counts, its rejected log), kept by a host that still serves the State.
   */
  final case class KeepCounts(state: String, incarnation: Long, applied: Long, rejected: Long,
      writerCounts: Map[String, (Long, Long)], rejectedLog: Array[RejectedUpdate])

  /** What rebuilding partitions from the tables rejected, each with its journal event. */
  final case class Rebuilt(rejections: Array[(Long, RejectedUpdate)])

  /** Is the host alive (answered by every host)? */
  case object Ping
  final case class Drop(state: String)

  /** One lifecycle step of a State's writers or readers, applied to the host's State. */
  sealed trait Lifecycle { def state: String; def incarnation: Long }
  final case class RegisterWriter(state: String, incarnation: Long, writer: String) extends Lifecycle
  final case class CheckNotLate(state: String, incarnation: Long, writer: String, epoch: Long) extends Lifecycle
  final case class CommitEpoch(state: String, incarnation: Long, writer: String, epoch: Long, progress: Long)
      extends Lifecycle
  final case class AbortEpoch(state: String, incarnation: Long, writer: String, epoch: Long) extends Lifecycle
  final case class FinishWriter(state: String, incarnation: Long, writer: String) extends Lifecycle
  final case class PauseWriter(state: String, incarnation: Long, writer: String) extends Lifecycle
  final case class DeregisterWriter(state: String, incarnation: Long, writer: String) extends Lifecycle
  final case class RegisterReader(state: String, incarnation: Long, reader: String) extends Lifecycle
  final case class ReportFetchProgress(state: String, incarnation: Long, reader: String, progress: Long)
      extends Lifecycle
  final case class FinishReader(state: String, incarnation: Long, reader: String) extends Lifecycle
  final case class DeregisterReader(state: String, incarnation: Long, reader: String) extends Lifecycle

  /**
   * What a host's commit of an epoch accepted and rejected (its partitions only); for a durable State,
   * the rejected updates themselves (the driver writes them to the rejected table).
   */
  final case class Committed(accepted: Int, rejected: Int, rejections: Array[RejectedUpdate] = Array.empty)

  /** The answer of a durable State's host to a lifecycle step that rejected updates (an update rule failing). */
  final case class StepRejected(rejections: Array[RejectedUpdate])

  // ---- to a host: data (sent by tasks, batched per owner) ----
  /**
   * The part of one write task's updates that falls in the host's partitions (maybe none: it replaces
   * an earlier attempt), split by the route of `routeVersion`.
   */
  final case class Stage(state: String, incarnation: Long, writer: String, epoch: Long, task: Int,
      keys: Array[Array[Byte]], times: Array[Long], values: Array[Array[Byte]], rejected: Array[RejectedUpdate],
      routeVersion: Long = 0L)
  final case class Fetch(state: String, incarnation: Long, requests: Array[FetchRequest])

  /** Answered when U passes the request (the host's pending queue): the reply comes later. */
  final case class FetchAsync(state: String, incarnation: Long, request: FetchRequest)
  final case class GetChanges(state: String, incarnation: Long, partition: Int, from: Long, until: Long)

  /** The host's U (equal to the driver's once a commit returns; never ahead of what the host applied). */
  final case class GetHostProgress(state: String, incarnation: Long)
  final case class ScanAsOf(state: String, incarnation: Long, partition: Int, asOf: Long)
  final case class GetRejected(state: String, incarnation: Long)
  final case class GetMetrics(state: String, incarnation: Long)

  /** One partition encoded for a snapshot (SnapshotCodec), at a commit boundary (the coordinator holds commits). */
  final case class EncodePartition(state: String, incarnation: Long, partition: Int)

  /** Captures a partition for a snapshot round at a commit boundary (the coordinator holds commits); answers a token. */
  final case class CaptureForSnapshot(state: String, incarnation: Long, partition: Int)

  /** Encodes capture `token`: a delta on snapshot `parent` (-1: none) if the host holds it, else in full. */
  final case class EncodeCapture(state: String, incarnation: Long, partition: Int, token: Long, parent: Long)
  final case class EncodedCapture(bytes: Array[Byte], delta: Boolean, entries: Int)

  /** Capture `token` was stored as snapshot `id`: the partition's next delta is taken on it. */
  final case class CaptureStored(state: String, incarnation: Long, partition: Int, token: Long, id: Long)

}
