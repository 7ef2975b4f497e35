package io.sharedstate.spark.txn

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
 * A transactional operator's own source of progress ticks: a member State's progress stream (the
 * group's U is every member's), as an internal table no data source name reaches. A tick each time U
 * moves makes Spark run a micro-batch, which emits the outcomes U made final, with no new events.
 */
private[sharedstate] final class TransactionTickTable(state: StateController, node: String)
    extends Table with SupportsRead {
  override def name(): String = s"sharedstate.${state.name}.txn-ticks"

  override def schema(): StructType = ProgressTicks.schema

  override def capabilities(): util.Set[TableCapability] = util.EnumSet.of(TableCapability.MICRO_BATCH_READ)

  override def newScanBuilder(options: CaseInsensitiveStringMap): ScanBuilder = () =>
    new Scan {
      override def readSchema(): StructType = ProgressTicks.schema
      override def description(): String = s"sharedstate ${state.name} progress ticks of $node"
      override def toMicroBatchStream(checkpointLocation: String): MicroBatchStream = new ProgressTickStream(state)
    }

  override def toString: String = name()
}
