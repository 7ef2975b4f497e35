package io.sharedstate.spark.cluster

/**
 * Requests for a host's change feed (see [[HostFeeds]]): a change-stream query opens one subscription
 * on every host of the State, and its tasks read each host's changes through it, in-process on the
 * host itself or over the host's RPC endpoint (Spark RPC, with spark.authenticate) from elsewhere.
 */
private[sharedstate] object HostFeedMessages {
  sealed trait HostFeedRequest { def state: String; def incarnation: Long }

  /** Subscribes to the host's feed from `from`; answered with [[HostFeedOpened]]. */
  final case class OpenHostFeed(state: String, incarnation: Long, from: Long) extends HostFeedRequest

  /** The subscription `subscription`, covering `partitions` (those the host owned when it opened). */
  final case class HostFeedOpened(subscription: Long, partitions: Array[Int])

  /** The subscription's changes with from <= timestamp < until, in (timestamp, partition, key) order. */
  final case class ReadHostFeed(state: String, incarnation: Long, subscription: Long, from: Long, until: Long)
      extends HostFeedRequest

  /** The feed's frontier once it passes `beyond` or after `waitMs` (0 from remote callers: no RPC thread waits). */
  final case class AwaitHostFeed(state: String, incarnation: Long, subscription: Long, beyond: Long, waitMs: Long)
      extends HostFeedRequest
  final case class CommitHostFeed(state: String, incarnation: Long, subscription: Long, until: Long)
      extends HostFeedRequest
  final case class CloseHostFeed(state: String, incarnation: Long, subscription: Long) extends HostFeedRequest
}
