package io.sharedstate.spark

import io.sharedstate.core.EventTime
import io.sharedstate.spark.distributed.DriverState

/** What the micro-batch and continuous change streams share: their reader registration and F. */
object ChangeStreams {
  /** Registers the stream of `checkpointLocation` as a reader of `state` (once: a restart keeps its F). */
  def register(state: DriverState, checkpointLocation: String): String = {
    val id = s"change-stream:$checkpointLocation"
    if (state.readerProgress(id).isEmpty) state.registerReader(id)
    id
  }

  /** Where a new stream starts: `earliest`, every pair compaction has kept (from F); `latest`, from U now. */
  def start(state: DriverState, starting: String): Long =
    if (starting == ReadOptions.Latest) state.updateProgress else state.fetchProgress

  /** The stream has read everything below `until`: F may pass it. */
  def advance(state: DriverState, reader: String, until: Long): Unit = {
    val current = state.readerProgress(reader).getOrElse(EventTime.MinusInfinity)
    if (until > current) state.reportFetchProgress(reader, until)
  }
}
