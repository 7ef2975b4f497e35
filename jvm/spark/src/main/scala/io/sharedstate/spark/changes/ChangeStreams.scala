package io.sharedstate.spark.changes

import io.sharedstate.spark.cluster.{StateAccess, StateController}
import io.sharedstate.spark.config.ReadOptions

import io.sharedstate.core.{ChangeSubscription, EventTime, SharedStateException}
import org.apache.spark.sql.connector.read.InputPartition

/** What the micro-batch and continuous change streams share: their reader registration, F and subscription. */
private[sharedstate] object ChangeStreams {

  /** Registers the stream of `checkpointLocation` as a reader of `state` (once: a restart keeps its F). */
  def register(state: StateController, checkpointLocation: String): String = {
    val id = s"change-stream:$checkpointLocation"
    if (state.readerProgress(id).isEmpty) state.registerReader(id)
    id
  }

  /** Where a new stream starts: `earliest`, every pair compaction has kept (from F); `latest`, from U now. */
  def start(state: StateController, starting: String): Long =
    if (starting == ReadOptions.Latest) state.updateProgress else state.fetchProgress

  /**
   * The stream's change subscription for reading from `from` on: `current` while it still keeps
   * `from`, else a new one (the old one closed). None in cluster mode (partitions are read by scan).
   */
  def subscription(state: StateController, current: ChangeSubscription, from: Long): Option[ChangeSubscription] =
    if (current != null && !current.isClosed && from >= current.keptFrom) Some(current)
    else {
      if (current != null) current.close()
      state.subscribeChanges(from)
    }

  /**
   * The input partitions of a merged position (a local-mode checkpoint) for the `mode` change stream
   * ("continuous", "real-time"): the tail of the stream's subscription, with the subscription to keep
   * (`current` when none); on a fresh start in a cluster, `perHost`'s partitions over the hosts' groups.
   * A local-mode checkpoint cannot resume mid-range in a cluster.
   */
  def mergedPlan(state: StateController, current: ChangeSubscription, merged: ChangePosition, mode: String,
      perHost: Seq[ChangePosition] => Array[InputPartition]): (ChangeSubscription, Array[InputPartition]) =
    subscription(state, current, merged.from) match {
      case Some(sub) => (sub, Array(ChangeFeedTail(state.name, sub.id, merged, ChangeContinuousStream.WaitMs)))
      case None if merged.index == 0 && merged.from == merged.until => // a fresh start: any plan fits
        (current, perHost(ChangeMicroBatchStream.hostGroups(state.name, merged.from)))
      case None => throw new SharedStateException(s"The $mode change stream of State '${state.name}' was " +
          "checkpointed in local mode (one merged reader) and cannot resume mid-range in a cluster; restart it " +
          "with a new checkpointLocation.")
    }

  /**
   * The stream has read everything below `until`: F may pass it, and what it reads from (the
   * driver's subscription in local mode, or each host's feed in a cluster; either may be null) may
   * drop what is older.
   */
  def commit(state: StateController, reader: String, subscription: ChangeSubscription, hostFeeds: HostFeedSet,
      until: Long): Unit = {
    val current = state.readerProgress(reader).getOrElse(EventTime.MinusInfinity)
    if (until > current) state.reportFetchProgress(reader, until)
    if (subscription != null) subscription.commit(until)
    if (hostFeeds != null) HostChangeFeeds.commit(StateAccess.clusterNode, hostFeeds, until)
  }

  /** Closes what a stream reads from (either may be null). */
  def close(subscription: ChangeSubscription, hostFeeds: HostFeedSet): Unit = {
    if (subscription != null) subscription.close()
    if (hostFeeds != null) HostChangeFeeds.close(StateAccess.clusterNode, hostFeeds)
  }
}
