package io.sharedstate.spark

import io.sharedstate.spark.changes.{ChangeContinuousStream, ChangeMicroBatchStream}
import io.sharedstate.spark.cluster.{StateClient, StateController}
import io.sharedstate.spark.config.ReadOptions
import io.sharedstate.spark.durable.DurableStates
import io.sharedstate.spark.changes.ProgressTickStream
import io.sharedstate.spark.rows.StateSchemas

import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.connector.read.{Batch, InputPartition, PartitionReaderFactory, Scan, ScanBuilder}
import org.apache.spark.sql.connector.read.streaming.{ContinuousStream, MicroBatchStream}
import org.apache.spark.sql.types.StructType

private[sharedstate] final class StateScanBuilder(state: StateController, schemas: StateSchemas, read: ReadOptions)
    extends ScanBuilder {
  override def build(): Scan = new Scan with Batch {
    override def readSchema(): StructType = read.schema
    override def description(): String = s"sharedstate ${state.name} table=${read.table}"
    override def toBatch: Batch = { read.checkBatch(); this }
    override def toMicroBatchStream(checkpointLocation: String): MicroBatchStream = {
      read.checkStreaming()
      if (read.table == ReadOptions.ProgressTable) new ProgressTickStream(state)
      else new ChangeMicroBatchStream(state, schemas, read.startingOffsets, checkpointLocation)
    }
    override def toContinuousStream(checkpointLocation: String): ContinuousStream = {
      read.checkStreaming()
      if (read.table == ReadOptions.ProgressTable) throw new io.sharedstate.core.SharedStateException(
        s"Table '${ReadOptions.ProgressTable}' is read in micro-batch mode only.")
      new ChangeContinuousStream(state, schemas, read.startingOffsets, checkpointLocation)
    }
    override def planInputPartitions(): Array[InputPartition] = {
      // A read-only durable State first catches up with the Delta changelog; a durable State's
      // rejected updates come from its rejected table (the whole history, also across restarts).
      DurableStates.catchUp(state.name)
      if (read.table == ReadOptions.RejectedTable) {
        Array(StateInputPartition(state.name, 0, read, None, DurableStates.rejected(state.name)))
      } else {
        val client = StateClient.of(state.name)
        // Older than compaction lets memory answer: a durable State answers from its Delta tables.
        val fromTables = if (read.asOfMicros == io.sharedstate.core.EventTime.PlusInfinity) None
        else DurableStates.asOfFromTables(SparkSession.active, state.spec, read.asOfMicros,
          math.min(state.fetchProgress, state.updateProgress))
        Array.tabulate[InputPartition](state.partitionCount)(i =>
          StateInputPartition(state.name, i, read, client.preferredHost(i), durablePairs = fromTables.map(_(i))))
      }
    }
    override def createReaderFactory(): PartitionReaderFactory = new StateReaderFactory(schemas)
  }

}
