package io.sharedstate.spark.changes

import io.sharedstate.spark.cluster.{StateAccess, StateClient}
import io.sharedstate.spark.rows.{ChangeRows, StateSchemas}

import io.sharedstate.core.Change
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}

private[sharedstate] final class ChangeRangeReaderFactory(schemas: StateSchemas) extends PartitionReaderFactory {
  override def createReader(partition: InputPartition): PartitionReader[InternalRow] = partition match {
    // real-time mode: the continuous readers with a deadline
    case tail @ (_: ChangeFeedTail | _: HostChangeTail | _: ChangeTail) =>
      new ChangeRealtimeReader(new ChangeTailReaderFactory(schemas).createReader(tail))
    case range => rangeReader(range)
  }

  private def rangeReader(partition: InputPartition): PartitionReader[InternalRow] = {
    val changes: Array[Change] = partition match {
      case r: ChangeFeedRange => StateClient.of(r.stateName).changeSubscription(r.subscription).changes(r.from, r.until)
      case r: ChangeRange => StateClient.of(r.stateName).changes(r.partition, r.from, r.until)
      case r: HostChangeRange =>
        HostChangeFeeds.read(StateAccess.clusterNode, r.stateName, r.incarnation, r.feed, r.from, r.until,
          StateClient.of(r.stateName))
    }
    val rows = new ChangeRows(schemas)
    new PartitionReader[InternalRow] {
      private var i = -1
      override def next(): Boolean = { i += 1; i < changes.length }
      override def get(): InternalRow = rows.row(changes(i))
      override def close(): Unit = ()
    }
  }
}
