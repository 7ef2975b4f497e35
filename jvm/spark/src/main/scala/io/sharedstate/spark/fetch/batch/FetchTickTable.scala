package io.sharedstate.spark.fetch.batch

import io.sharedstate.spark.changes.{ProgressTickStream, ProgressTickTable}
import io.sharedstate.spark.cluster.StateController
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream

/**
 * A fetch join's own source of progress ticks (see fetch.FetchJoin). Planned as a source of the
 * join's query, it keeps the join's batch bounds and waiting events under the source's checkpoint
 * directory ([[BatchBounds.registerFromStream]]), and starts recording each batch's bound as Spark
 * plans it.
 */
private[sharedstate] final class FetchTickTable(state: StateController, join: String)
    extends ProgressTickTable(state, "fetch-ticks", s"fetch join $join") {

  override protected def stream(checkpointLocation: String): MicroBatchStream = {
    BatchBounds.registerFromStream(join, checkpointLocation)
    val stateName = state.name
    new ProgressTickStream(state) {
      override protected def planned(): Unit = BatchBounds.prepare(join, stateName)
    }
  }
}
