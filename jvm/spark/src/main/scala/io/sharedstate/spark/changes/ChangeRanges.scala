package io.sharedstate.spark.changes

import org.apache.spark.sql.connector.read.InputPartition

/** The changes of one State partition with from <= timestamp < until (cluster mode: read by scan). */
private[sharedstate] final case class ChangeRange(stateName: String, partition: Int, from: Long, until: Long,
    host: Option[String])
    extends InputPartition {
  override def preferredLocations(): Array[String] = host.toArray
}

/** Every partition's changes with from <= timestamp < until, from the query's change subscription (local mode). */
private[sharedstate] final case class ChangeFeedRange(stateName: String, subscription: Long, from: Long, until: Long)
    extends InputPartition

/** One host's changes with from <= timestamp < until, from the query's subscription on that host (cluster mode). */
private[sharedstate] final case class HostChangeRange(stateName: String, incarnation: Long, feed: HostFeed, from: Long,
    until: Long)
    extends InputPartition {
  override def preferredLocations(): Array[String] = Array(feed.location)
}
