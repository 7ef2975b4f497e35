package io.sharedstate.spark.cluster

import io.sharedstate.spark.rows.StoredPairs

import io.sharedstate.core.{Change, ChangeSubscription, FetchAnswer, RejectedUpdate, StateSpec, UpdateBatch}
import io.sharedstate.core.fetch.FetchRequest
import java.util.concurrent.CompletableFuture
import org.apache.spark.internal.Logging

/**
 * The task-side client of a cluster State: each call goes through a [[RoutedStateClient]] on the
 * route this JVM knows; when a host does not answer, the coordinator is told (it checks the host and,
 * for a durable State, rebuilds the lost partitions on a live host before answering), the route is
 * fetched again and the call is retried, a bounded number of times. A host answering "moved" (a live
 * move took the partition elsewhere, see ClusterStateController.move) did nothing: the call is sent
 * again on the new route. Every call is safe to repeat: a stage replaces the task's earlier one, the
 * others read.
 */
private[sharedstate] final class RecoveringStateClient(state: String, node: ClusterNode)
    extends StateClient with Logging {
  import RecoveringStateClient.{Attempts, MovedAttempts, Retries}

  private def attempt[T](call: RoutedStateClient => T): T = {
    var tries = 0
    var moves = 0
    while (true) {
      try return call(node.routed(state))
      catch {
        // A live move: the old owner did nothing with the request; the new route (the coordinator
        // hands it out once the move's fence is over) says where to send it again.
        case e: PartitionMovedException if moves + 1 < MovedAttempts =>
          moves += 1
          logInfo(s"State $state: ${e.getMessage}")
          node.forget(state)
        case e: HostUnreachableException if tries + 1 < Attempts =>
          tries += 1
          logWarning(
            s"State $state: ${e.host} did not answer; asking the coordinator, then retrying ($tries of ${Attempts - 1})")
          node.forget(state)
          node.hostUnreachable(state, e.host)
          node.forget(state)
      }
    }
    throw new IllegalStateException("unreachable")
  }

  private val first = node.routed(state) // an unknown State fails here, naming the existing ones
  override def name: String = state
  override def spec: StateSpec = first.spec
  override def incarnation: Long = first.incarnation
  override def updateProgress: Long = node.updateProgress(state)

  override def stage(writer: String, epoch: Long, task: Int, batch: UpdateBatch): Unit =
    attempt(_.stage(writer, epoch, task, batch))
  override def fetch(requests: IndexedSeq[FetchRequest]): Array[FetchAnswer] = attempt(_.fetch(requests))

  override def fetchAsync(request: FetchRequest): CompletableFuture[FetchAnswer] = fetchAsync(request, 1, 1)

  // A fetch waiting at its owner when its partition moves is answered "moved" and asked again on the new route.
  private def fetchAsync(request: FetchRequest, tries: Int, moves: Int): CompletableFuture[FetchAnswer] =
    attempt(_.fetchAsync(request)).exceptionallyCompose { e =>
      (unreachable(e), moved(e)) match {
        // Not on the thread that completed the answer (an RPC thread): asking for the new route waits
        // for the move's fence, whose hand-over reply may need that very thread.
        case (_, Some(_)) if moves < MovedAttempts =>
          CompletableFuture.supplyAsync(() => node.forget(state), Retries)
            .thenComposeAsync(_ => fetchAsync(request, tries, moves + 1), Retries)
        case (Some(lost), _) if tries < Attempts =>
          CompletableFuture.supplyAsync(() => {
              node.forget(state); node.hostUnreachable(state, lost.host); node.forget(state)
            }, Retries)
            .thenComposeAsync(_ => fetchAsync(request, tries + 1, moves), Retries)
        case _ => CompletableFuture.failedFuture[FetchAnswer](e)
      }
    }

  override def changes(partition: Int, from: Long, until: Long): Array[Change] =
    attempt(_.changes(partition, from, until))
  override def updateProgressAt(partition: Int): Long = attempt(_.updateProgressAt(partition))
  override def readerProgress(reader: String): Option[Long] = node.readerProgress(state, reader)
  override def ensureReader(reader: String): Unit = node.ensureReader(state, reader)
  override def asOf(partition: Int, asOf: Long): StoredPairs = attempt(_.asOf(partition, asOf))
  override def rejectedUpdates: Seq[RejectedUpdate] = attempt(_.rejectedUpdates)
  override def preferredHost(partition: Int): Option[String] = attempt(_.preferredHost(partition))
  override def changeSubscription(id: Long): ChangeSubscription =
    first.changeSubscription(id) // fails as the routed client does

  private def moved(e: Throwable): Option[PartitionMovedException] =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).take(10).collectFirst { case m: PartitionMovedException => m }

  private def unreachable(e: Throwable): Option[HostUnreachableException] =
    Iterator.iterate(e)(_.getCause).takeWhile(_ != null).take(10).collectFirst { case h: HostUnreachableException => h }
}

private[sharedstate] object RecoveringStateClient {

  /** Tries per call: a host lost, its partitions rebuilt elsewhere, and that host lost too, with room to spare. */
  val Attempts = 4

  /** Tries per call across live moves of its partitions (each move answers "moved" at most once per route). */
  val MovedAttempts = 32

  // Where an asynchronous fetch is sent again (after a move or a lost host).
  private lazy val Retries = java.util.concurrent.Executors.newCachedThreadPool { (r: Runnable) =>
    val t = new Thread(r, "sharedstate-fetch-retry"); t.setDaemon(true); t
  }
}
