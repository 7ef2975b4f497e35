package io.sharedstate.spark.changes

import io.sharedstate.spark.cluster.{
  ClusterNode,
  HostFeedMessages,
  HostId,
  HostLink,
  StateAccess,
  StateClient,
  StateRoute
}

import io.sharedstate.core.Change
import HostFeedMessages._
import java.util.concurrent.atomic.AtomicLong
import org.apache.spark.internal.Logging
import scala.util.control.NonFatal

/**
 * The change stream in cluster mode: one change subscription per executor host, on the feed of that
 * host's own partitions (cluster.HostFeeds), and one input partition per host. The driver opens,
 * commits and closes the subscriptions; tasks read them on the host (a direct call) or from anywhere
 * else over the host's RPC endpoint. If the layout of partitions changes (a live move, or a lost
 * executor's partitions rebuilt elsewhere) the stream reads that batch by scan and opens new subscriptions on the new
 * layout for the next; a task that cannot read its host's subscription scans the host's partitions
 * (routed to wherever they are now) for its range instead. Both give the same changes in the same
 * order, so offsets (U) and exactly-once are those of the scan path.
 */
private[sharedstate] object HostChangeFeeds extends Logging {
  private val hostPlans = new AtomicLong()
  private val scanPlans = new AtomicLong()
  private val scanFallbacks = new AtomicLong()

  /** Plans (micro-batches, continuous starts) read through host feeds, in this JVM (the driver). */
  def hostFeedPlans(): Long = hostPlans.get

  /** Plans read by scan in cluster mode (the layout changed, or a host feed could not be opened). */
  def scanPlansInCluster(): Long = scanPlans.get

  /** Host-feed reads that fell back to a scan, in this JVM (executors count their own). */
  def readFallbacks(): Long = scanFallbacks.get

  private[spark] def countPlan(host: Boolean): Unit = (if (host) hostPlans else scanPlans).incrementAndGet()

  /** Where the State's partitions are now (the coordinator's route, on the driver). */
  def layout(stateName: String): StateRoute = StateAccess.clusterNode.currentRoute(stateName)

  /**
   * No partition moved between the two routes. The version counts moves, so a partition that moved
   * away and back (owners as before) is a change too: its pairs of the meantime are in no host's feed.
   */
  def sameLayout(a: StateRoute, b: StateRoute): Boolean =
    a.incarnation == b.incarnation && a.version == b.version && a.owners.sameElements(b.owners)

  /**
   * Opens a subscription on every host of `route` from `from(host)`; None (and nothing left open) if a
   * host fails to open one or the layout changed meanwhile (`current` tells).
   */
  def open(
      node: ClusterNode, route: StateRoute, from: HostId => Long, current: () => StateRoute): Option[HostFeedSet] = {
    val asked = route.hosts.map(h => h -> node.link(h).ask(OpenHostFeed(route.name, route.incarnation, from(h))))
    val opened = asked.flatMap { case (h, f) =>
      try {
        val o = HostLink.await[HostFeedOpened](f, h, route.name, route.partitionsOf(h))
        Some(HostFeed(h, o.subscription, o.partitions))
      } catch { case NonFatal(e) => logWarning(s"State ${route.name}: no change subscription on $h", e); None }
    }
    val set = new HostFeedSet(route, opened, route.hosts.map(from).min)
    val complete =
      opened.size == asked.size && opened.forall(f => f.partitions.sameElements(route.partitionsOf(f.host)))
    if (complete && sameLayout(route, current())) Some(set)
    else { close(node, set); None }
  }

  /** The query read everything below `until`: each host forgets it (a host that does not answer is skipped). */
  def commit(node: ClusterNode, set: HostFeedSet, until: Long): Unit = {
    set.committed(until)
    each(node, set, f => CommitHostFeed(set.route.name, set.route.incarnation, f.subscription, until))
  }

  def close(node: ClusterNode, set: HostFeedSet): Unit =
    each(node, set, f => CloseHostFeed(set.route.name, set.route.incarnation, f.subscription))

  private def each(node: ClusterNode, set: HostFeedSet, message: HostFeed => Any): Unit = {
    val asked = set.feeds.map(f => f -> node.link(f.host).ask(message(f)))
    asked.foreach { case (f, answer) =>
      try HostLink.await[Any](answer, f.host, set.route.name, f.partitions.toSeq)
      catch { case NonFatal(e) => logWarning(s"State ${set.route.name}: ${f.host} did not take ${message(f)}", e) }
    }
  }

  /**
   * The changes of `feed` with from <= timestamp < until, in (timestamp, partition, key) order; if
   * the host's subscription cannot be read (its executor is gone, say), the same changes by scan.
   */
  def read(node: ClusterNode, stateName: String, incarnation: Long, feed: HostFeed, from: Long, until: Long,
      scanWith: => StateClient): Array[Change] =
    try HostLink.await[Array[Change]](node.link(feed.host).ask(ReadHostFeed(stateName, incarnation, feed.subscription,
            from, until)),
        feed.host, stateName, feed.partitions.toSeq)
    catch {
      case NonFatal(e) if !interrupted(e) =>
        logWarning(
          s"State $stateName: the change subscription on ${feed.host} could not be read; scanning " +
            s"partition(s) ${feed.partitions.mkString(", ")} for [$from, $until) instead",
          e
        )
        scanFallbacks.incrementAndGet()
        scan(scanWith, feed.partitions.toSeq, from, until)
    }

  /** The feed's frontier: waits up to `waitMs` for it to pass `beyond` on the host itself, asks once from elsewhere. */
  def frontier(
      node: ClusterNode, stateName: String, incarnation: Long, feed: HostFeed, beyond: Long, waitMs: Long): Long = {
    val local = node.localHost != null && node.localHost.id == feed.host
    HostLink.await[Long](
      node.link(feed.host).ask(AwaitHostFeed(stateName, incarnation, feed.subscription, beyond,
          if (local) waitMs else 0L)),
      feed.host,
      stateName,
      feed.partitions.toSeq
    )
  }

  /** Spark stops a continuous reader by interrupting it; an RPC wait wraps the interrupt in its failure. */
  def interrupted(e: Throwable): Boolean =
    Thread.currentThread().isInterrupted || Iterator.iterate(e)(_.getCause).takeWhile(_ != null).take(10)
      .exists(_.isInstanceOf[InterruptedException])

  /** `partitions`' changes in [from, until) by scan, merged in (timestamp, partition, key) order: the feed's order. */
  def scan(client: StateClient, partitions: Seq[Int], from: Long, until: Long): Array[Change] = {
    val all = Array.concat(partitions.sorted.map(client.changes(_, from, until)): _*)
    java.util.Arrays.sort(all, Ordering.by[Change, Long](_.time)) // stable: partition, then key order within a time
    all
  }
}
