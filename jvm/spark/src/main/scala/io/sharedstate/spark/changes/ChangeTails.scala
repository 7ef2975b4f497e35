package io.sharedstate.spark.changes

import org.apache.spark.sql.connector.read.InputPartition

/**
 * A continuous reader of one State partition, or of a group that no host owns as a whole any more
 * (the layout changed since the checkpoint), polling U and scanning (cluster mode).
 */
private[sharedstate] final case class ChangeTail(stateName: String, start: ChangePosition, pollMs: Long,
    host: Option[String])
    extends InputPartition {
  override def preferredLocations(): Array[String] = host.toArray
}

/** The continuous reader of the query's change subscription (local mode). */
private[sharedstate] final case class ChangeFeedTail(stateName: String, subscription: Long, start: ChangePosition,
    waitMs: Long)
    extends InputPartition

/** The continuous reader of one host's partitions, from the query's subscription on that host (cluster mode). */
private[sharedstate] final case class HostChangeTail(stateName: String, incarnation: Long, feed: HostFeed,
    start: ChangePosition,
    waitMs: Long, pollMs: Long)
    extends InputPartition {
  override def preferredLocations(): Array[String] = Array(feed.location)
}
