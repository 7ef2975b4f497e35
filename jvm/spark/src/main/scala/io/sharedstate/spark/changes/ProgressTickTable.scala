package io.sharedstate.spark.changes

import io.sharedstate.spark.cluster.StateController
import io.sharedstate.spark.rows.ProgressTicks
import java.util
import org.apache.spark.sql.connector.catalog.{SupportsRead, Table, TableCapability}
import org.apache.spark.sql.connector.read.{Scan, ScanBuilder}
import org.apache.spark.sql.connector.read.streaming.MicroBatchStream
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap

/**
 * A State's progress stream as an internal table that no data source name or user option reaches,
 * planned as a source of one operator's query (a fetch join's, a transactional operator's): a tick
 * each time U moves makes Spark run a micro-batch with no new events. `kind` names the table
 * (`sharedstate.<state>.<kind>`), `owner` the operator in the scan's description; [[stream]] is the
 * operator's own instance of the stream (by default the plain [[ProgressTickStream]]).
 */
private[sharedstate] abstract class ProgressTickTable(protected val state: StateController, kind: String,
    owner: String)
    extends Table with SupportsRead {
  override def name(): String = s"sharedstate.${state.name}.$kind"

  override def schema(): StructType = ProgressTicks.schema

  override def capabilities(): util.Set[TableCapability] = util.EnumSet.of(TableCapability.MICRO_BATCH_READ)

  /** The stream Spark reads, with the source's checkpoint directory. */
  protected def stream(checkpointLocation: String): MicroBatchStream = new ProgressTickStream(state)

  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder = () =>
    new Scan {
      override def readSchema(): StructType = ProgressTicks.schema
      override def description(): String = s"sharedstate ${state.name} progress ticks of $owner"
      override def toMicroBatchStream(checkpointLocation: String): MicroBatchStream = stream(checkpointLocation)
    }

  override def toString: String = name()
}
