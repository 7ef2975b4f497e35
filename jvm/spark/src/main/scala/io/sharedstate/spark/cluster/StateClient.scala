package io.sharedstate.spark.cluster

import io.sharedstate.spark.rows.StoredPairs

import io.sharedstate.core.{Change, ChangeSubscription, FetchAnswer, RejectedUpdate, StateSpec, UpdateBatch}
import java.util.concurrent.CompletableFuture
import io.sharedstate.core.fetch.{FetchAnswers, FetchRequest}

/**
 * What task-side code (writers, fetch joins, scans, SQL) does with a State, wherever its partitions
 * are: the one seam between Spark operators and State hosting. In local mode it is the in-process
 * State itself; in a cluster it routes each request to the owner of the key's partition (a direct
 * call when that is this JVM, one batched RPC per owner otherwise).
 */
private[sharedstate] trait StateClient {
  def name: String
  def spec: StateSpec

  /** The creation of the State this client reaches (see StateController.incarnation). */
  def incarnation: Long

  /** U as the coordinator knows it (for messages; answers are decided by the owners). */
  def updateProgress: Long

  /** Stages one write task's updates of `epoch` (a retried task replaces its earlier attempt). */
  def stage(writer: String, epoch: Long, task: Int, batch: UpdateBatch): Unit

  /** Answers `requests` (in order): NotYet for those whose reply time is not below U. */
  def fetch(requests: IndexedSeq[FetchRequest]): Array[FetchAnswer]

  def fetch(request: FetchRequest): FetchAnswer = fetch(IndexedSeq(request))(0)

  /**
   * Answers `requests(0 until count)` into `out`, in order, as [[fetch]] would. A State in this JVM reads
   * found `latest` values in place (`State.fetchInto`: no answer object per request); elsewhere the
   * answers of [[fetch]] are copied in.
   */
  def fetchInto(requests: Array[FetchRequest], count: Int, out: FetchAnswers): Unit =
    FetchAnswers.of(fetch(scala.collection.immutable.ArraySeq.unsafeWrapArray(requests).take(count)), out)

  /** Answered as soon as U passes the request's reply time (from the owner's pending queue). */
  def fetchAsync(request: FetchRequest): CompletableFuture[FetchAnswer]

  /** The applied pairs of `partition` with from <= timestamp < until (a range below U), in timestamp order. */
  def changes(partition: Int, from: Long, until: Long): Array[Change]

  /** The open change subscription `id` of the State (local mode: the driver opened it in this JVM). */
  def changeSubscription(id: Long): ChangeSubscription

  /** U where `partition` is hosted: everything below it is applied there. */
  def updateProgressAt(partition: Int): Long

  /** A reader's fetch progress as the coordinator knows it (none when it is not registered). */
  def readerProgress(reader: String): Option[Long]

  /** Registers `reader` (fetch progress F) unless it is registered already. */
  def ensureReader(reader: String): Unit

  /** Partition `partition` as of `asOf`: per key, the newest applied pair at or before it. */
  def asOf(partition: Int, asOf: Long): StoredPairs

  /** Late and rejected updates of every host, each host's oldest first. */
  def rejectedUpdates: Seq[RejectedUpdate]

  /** The host tasks reading `partition` should run on (none in local mode). */
  def preferredHost(partition: Int): Option[String]
}

private[sharedstate] object StateClient {

  /** The client of State `name` for this JVM; an unknown name fails, listing the existing States. */
  def of(name: String): StateClient = StateAccess.get.client(name)
}
