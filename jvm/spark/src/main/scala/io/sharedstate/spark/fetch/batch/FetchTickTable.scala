package io.sharedstate.spark.fetch.batch

import io.sharedstate.spark.changes.ProgressTickStream
import io.sharedstate.spark.cluster.StateController
import io.sharedstate.spark.rows.ProgressTicks
import java.util
import org.apache.spark.sql.connector.catalog.{SupportsRead, Table, TableCapability}
import org.apache.spark.sql.connector.read.{Scan, ScanBuilder}
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * A fetch join's own source of progress ticks: the State's progress stream as an internal table that
 * no data source name or user option reaches (see fetch.FetchJoin). Planned as a source of the join's
 * query, it keeps the join's batch bounds and waiting events under the source's checkpoint directory
 * ([[BatchBounds.registerFromStream]]), and starts recording each batch's bound as Spark plans it.
 */
private[sharedstate] final class FetchTickTable(state: StateController, join: String) extends Table with SupportsRead {
  override def name(): String = s"sharedstate.${state.name}.fetch-ticks"

  override def schema(): StructType = ProgressTicks.schema

  override def capabilities(): util.Set[TableCapability] = util.EnumSet.of(TableCapability.MICRO_BATCH_READ)

  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder = () =>
    new Scan {
      override def readSchema(): StructType = ProgressTicks.schema
      override def description(): String = s"sharedstate ${state.name} progress ticks of fetch join $join"
      override def toMicroBatchStream(checkpointLocation: String): MicroBatchStream = {
        BatchBounds.registerFromStream(join, checkpointLocation)
        val stateName = state.name
        new ProgressTickStream(state) {
          override protected def planned(): Unit = BatchBounds.prepare(join, stateName)
        }
      }
    }

  override def toString: String = name()
}
