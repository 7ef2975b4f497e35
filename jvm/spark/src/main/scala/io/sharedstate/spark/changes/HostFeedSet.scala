package io.sharedstate.spark.changes

import io.sharedstate.spark.cluster.{HostId, StateRoute}

/** One host's change subscription of a change-stream query: it covers `partitions` (those the host owned). */
private[sharedstate] final case class HostFeed(host: HostId, subscription: Long, partitions: Array[Int]) {

  /**
   * Where a task reading it should run: that very executor (Spark's `executor_<host>_<id>` location),
   * since hosts of one machine share a host name (local-cluster); the bare host name if it has a `_`.
   */
  def location: String = if (host.host.contains('_')) host.host else s"executor_${host.host}_${host.executorId}"
}

/** The host subscriptions of one change-stream query, opened on the layout `route`. */
private[sharedstate] final class HostFeedSet(val route: StateRoute, val feeds: Seq[HostFeed], from: Long) {
  @volatile private var floor = from

  /** Changes from here on can still be read (the query committed what is below). */
  def keptFrom: Long = floor
  private[spark] def committed(until: Long): Unit = floor = math.max(floor, until)
  def feedOf(host: HostId): Option[HostFeed] = feeds.find(_.host == host)
}
