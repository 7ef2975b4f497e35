package io.sharedstate.spark

import io.sharedstate.spark.cluster.StateClient
import io.sharedstate.spark.config.ReadOptions
import io.sharedstate.spark.read.{AsOfRows, RejectedRows}
import io.sharedstate.spark.rows.{StateSchemas, StoredPairs}

import io.sharedstate.core.RejectedUpdate
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}

/**
 * One input partition per State partition, preferring the executor that owns it (read there, the
 * scan is a local call; anywhere else it is one RPC to the owner). The rejected table is one partition.
 */
private[sharedstate] final case class StateInputPartition(stateName: String, partition: Int, read: ReadOptions,
    host: Option[String],
    durableRejected: Option[Seq[RejectedUpdate]] = None, durablePairs: Option[StoredPairs] = None)
    extends InputPartition {
  override def preferredLocations(): Array[String] = host.toArray
}

private[sharedstate] final class StateReaderFactory(schemas: StateSchemas) extends PartitionReaderFactory {
  override def createReader(partition: InputPartition): PartitionReader[InternalRow] = {
    val p = partition.asInstanceOf[StateInputPartition]
    val client = StateClient.of(p.stateName)
    val rows =
      if (p.read.table == ReadOptions.RejectedTable)
        RejectedRows.rows(p.durableRejected.getOrElse(client.rejectedUpdates), schemas)
      else {
        val pairs = p.durablePairs.getOrElse(client.asOf(p.partition, p.read.asOfMicros))
        if (p.read.instances) AsOfRows.instanceRows(pairs, schemas) else AsOfRows.rows(pairs, schemas)
      }
    new PartitionReader[InternalRow] {
      private var current: InternalRow = _
      override def next(): Boolean = if (rows.hasNext) { current = rows.next(); true }
      else false
      override def get(): InternalRow = current
      override def close(): Unit = ()
    }
  }
}
