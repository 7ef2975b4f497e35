package io.sharedstate.spark.cluster

import io.sharedstate.spark.rows.{AsOfPairs, StoredPairs}

import io.sharedstate.core.{Change, ChangeSubscription, FetchAnswer, RejectedUpdate, State, StateSpec, UpdateBatch}
import java.util.concurrent.CompletableFuture
import io.sharedstate.core.fetch.{FetchAnswers, FetchRequest}

/** Local mode: the State lives in this JVM (the embedded default), so every call is a direct one. */
private[sharedstate] final class LocalStateClient(state: State) extends StateClient {
  override def name: String = state.name
  override def spec: StateSpec = state.spec
  override def incarnation: Long = state.incarnation
  override def updateProgress: Long = state.updateProgress

  override def stage(writer: String, epoch: Long, task: Int, batch: UpdateBatch): Unit =
    state.stage(writer, epoch, task, batch)

  override def fetch(request: FetchRequest): FetchAnswer = state.fetch(request)

  override def fetch(requests: IndexedSeq[FetchRequest]): Array[FetchAnswer] = state.fetch(requests.toArray)

  override def fetchInto(requests: Array[FetchRequest], count: Int, out: FetchAnswers): Unit =
    state.fetchInto(requests, count, out)

  override def fetchAsync(request: FetchRequest): CompletableFuture[FetchAnswer] = state.fetchAsync(request)
  override def changes(partition: Int, from: Long, until: Long): Array[Change] = state.changes(partition, from, until)
  override def changeSubscription(id: Long): ChangeSubscription = state.changeSubscription(id)
  override def updateProgressAt(partition: Int): Long = state.updateProgress
  override def readerProgress(reader: String): Option[Long] = state.readerProgress(reader)
  override def ensureReader(reader: String): Unit =
    state.synchronized { if (state.readerProgress(reader).isEmpty) state.registerReader(reader) }

  override def asOf(partition: Int, asOf: Long): StoredPairs = AsOfPairs.of(state.partition(partition), asOf)
  override def rejectedUpdates: Seq[RejectedUpdate] = state.rejectedUpdates
  override def preferredHost(partition: Int): Option[String] = None
}
