package io.sharedstate.spark.changes

import io.sharedstate.spark.cluster.StateController
import io.sharedstate.spark.config.ReadOptions

import io.sharedstate.core.{ChangeSubscription, EventTime}

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

  /** The stream has read everything below `until`: F may pass it. */
  def advance(state: StateController, reader: String, until: Long): Unit = {
    val current = state.readerProgress(reader).getOrElse(EventTime.MinusInfinity)
    if (until > current) state.reportFetchProgress(reader, until)
  }
}
