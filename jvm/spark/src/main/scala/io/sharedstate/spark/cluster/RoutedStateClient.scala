package io.sharedstate.spark.cluster

import io.sharedstate.spark.rows.StoredPairs

import io.sharedstate.core.{
  Change,
  ChangeSubscription,
  FetchAnswer,
  Key,
  RejectedUpdate,
  SharedStateException,
  StateSpec,
  UpdateBatch
}
import java.util.concurrent.CompletableFuture
import io.sharedstate.core.fetch.FetchRequest
import Messages._
import scala.collection.mutable.ArrayBuffer

/**
 * A State whose partitions live on several hosts: each call is split by owner, sent as one message
 * per owner (all at once, then awaited), and answered directly when the owner is this JVM.
 */
private[sharedstate] final class RoutedStateClient(route: StateRoute, node: ClusterNode) extends StateClient {
  private val hosts = route.hosts.toArray
  private val hostIndex = hosts.zipWithIndex.toMap
  private val ownerIndex = route.owners.map(hostIndex)
  private val partitions = route.owners.length

  override def name: String = route.name
  override def spec: StateSpec = route.spec
  override def incarnation: Long = route.incarnation
  override def updateProgress: Long = node.updateProgress(name)

  // Every host gets a message, empty or not, so a retried task replaces its earlier attempt everywhere.
  override def stage(writer: String, epoch: Long, task: Int, batch: UpdateBatch): Unit = {
    val parts = Array.fill(hosts.length)(new UpdateBatch)
    var i = 0
    while (i < batch.size) {
      val key = batch.keyAt(i)
      parts(ownerIndex(new Key(key).partition(partitions))).add(key, batch.timeAt(i), batch.valueAt(i))
      i += 1
    }
    // Rows rejected for a null key or time have no partition: the host of the task's partition keeps them.
    val rejectedAt = ownerIndex(math.floorMod(task, partitions))
    batch.rejectedUpdates.foreach(parts(rejectedAt).reject)
    val sent = hosts.indices.map { h =>
      node.localHost match {
        case local if local != null && local.id == hosts(h) =>
          scala.concurrent.Future.fromTry(scala.util.Try(local.stage(name, route.incarnation, writer, epoch, task,
                parts(h), route.version)))
        case _ =>
          val p = parts(h)
          node.link(hosts(h)).ask(Stage(
              name,
              route.incarnation,
              writer,
              epoch,
              task,
              Array.tabulate(p.size)(p.keyAt),
              Array.tabulate(p.size)(p.timeAt),
              Array.tabulate(p.size)(p.valueAt),
              p.rejectedUpdates.toArray,
              route.version
            ))
      }
    }
    hosts.indices.foreach(h => HostLink.await[Any](sent(h), hosts(h), name, route.partitionsOf(hosts(h))))
  }

  override def fetch(requests: IndexedSeq[FetchRequest]): Array[FetchAnswer] = {
    val byHost = Array.fill(hosts.length)(ArrayBuffer.empty[Int])
    var i = 0
    while (i < requests.length) { byHost(ownerIndex(requests(i).key.partition(partitions))) += i; i += 1 }
    val out = new Array[FetchAnswer](requests.length)
    val asked = hosts.indices.filter(byHost(_).nonEmpty).map { h =>
      val batch = byHost(h).map(requests).toArray
      val local = node.localHost
      h -> (if (local != null && local.id == hosts(h)) scala.concurrent.Future.fromTry(
              scala.util.Try(local.fetch(name, route.incarnation, batch)))
            else node.link(hosts(h)).ask(Fetch(name, route.incarnation, batch)))
    }
    asked.foreach { case (h, answer) =>
      val answers = HostLink.await[Array[FetchAnswer]](answer, hosts(h), name, route.partitionsOf(hosts(h)))
      var j = 0
      while (j < answers.length) { out(byHost(h)(j)) = answers(j); j += 1 }
    }
    out
  }

  override def fetchAsync(request: FetchRequest): CompletableFuture[FetchAnswer] = {
    val owner = hosts(ownerIndex(request.key.partition(partitions)))
    val local = node.localHost
    if (local != null && local.id == owner) local.fetchAsync(name, route.incarnation, request)
    else {
      val out = new CompletableFuture[FetchAnswer]()
      node.link(owner).ask(FetchAsync(name, route.incarnation, request)).onComplete { result =>
        try out.complete(HostLink.await[FetchAnswer](scala.concurrent.Future.fromTry(result), owner, name,
              route.partitionsOf(owner)))
        catch { case e: Throwable => out.completeExceptionally(e) }
      }(scala.concurrent.ExecutionContext.parasitic)
      out
    }
  }

  override def changes(partition: Int, from: Long, until: Long): Array[Change] = {
    val owner = route.owners(partition)
    val local = node.localHost
    if (local != null && local.id == owner) local.changes(name, route.incarnation, partition, from, until)
    else
      HostLink.await[Array[Change]](node.link(owner).ask(GetChanges(name, route.incarnation, partition, from, until)),
        owner, name, Seq(partition))
  }

  // A cluster's change stream reads one subscription per host (see HostChangeFeeds), never a driver-side one.
  override def changeSubscription(id: Long): ChangeSubscription = throw new SharedStateException(
    s"State '$name' is hosted on executors: its change stream reads each host's change subscription, not a local one.")

  override def updateProgressAt(partition: Int): Long = {
    val owner = route.owners(partition)
    val local = node.localHost
    if (local != null && local.id == owner) local.hostProgress(name, route.incarnation)
    else
      HostLink.await[Long](node.link(owner).ask(GetHostProgress(name, route.incarnation)), owner, name, Seq(partition))
  }

  override def readerProgress(reader: String): Option[Long] = node.readerProgress(name, reader)

  override def ensureReader(reader: String): Unit = node.ensureReader(name, reader)

  override def asOf(partition: Int, asOf: Long): StoredPairs = {
    val owner = route.owners(partition)
    val local = node.localHost
    if (local != null && local.id == owner) local.scanAsOf(name, route.incarnation, partition, asOf)
    else HostLink.await[StoredPairs](node.link(owner).ask(ScanAsOf(name, route.incarnation, partition, asOf)),
      owner, name, Seq(partition))
  }

  override def rejectedUpdates: Seq[RejectedUpdate] = {
    val asked = hosts.map(h => h -> node.link(h).ask(GetRejected(name, route.incarnation)))
    asked.toSeq.flatMap { case (h, f) =>
      HostLink.await[Array[RejectedUpdate]](f, h, name, route.partitionsOf(h)).toSeq
    }
  }

  override def preferredHost(partition: Int): Option[String] = Some(route.owners(partition).host)
}
