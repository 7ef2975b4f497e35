package io.sharedstate.spark

import io.sharedstate.spark.distributed.{DriverState, StateClient}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming.Offset

/** A micro-batch offset of a change stream: every change with a timestamp below it has been read. */
final case class ChangeOffset(until: Long) extends Offset {
  override def json(): String = until.toString
}

/** The changes of one State partition with from <= timestamp < until. */
final case class ChangeRange(stateName: String, partition: Int, from: Long, until: Long) extends InputPartition

/**
 * The change stream of a State in micro-batch mode. Offsets are update progress U: a batch reads,
 * from every partition, the applied pairs with timestamps in [previous U, U), which are final, so a
 * re-run batch reads exactly the same changes (exactly-once with any idempotent or transactional
 * sink). The stream is a reader of the State: its fetch progress F is the last committed offset,
 * so compaction keeps every pair it has not read yet, also while the query is stopped.
 */
final class ChangeMicroBatchStream(protected val state: DriverState, schemas: StateSchemas, starting: String,
    checkpointLocation: String) extends UpdateProgressOffsets {

  private val reader = ChangeStreams.register(state, checkpointLocation)

  override def initialOffset(): Offset = ChangeOffset(ChangeStreams.start(state, starting))

  override def planInputPartitions(start: Offset, end: Offset): Array[InputPartition] = {
    val (from, until) = range(start, end)
    Array.tabulate[InputPartition](state.partitionCount)(p => ChangeRange(state.name, p, from, until))
  }

  override def createReaderFactory(): PartitionReaderFactory = new ChangeRangeReaderFactory(schemas)

  override def commit(end: Offset): Unit = ChangeStreams.advance(state, reader, end.asInstanceOf[ChangeOffset].until)

  override def stop(): Unit = ()
}

final class ChangeRangeReaderFactory(schemas: StateSchemas) extends PartitionReaderFactory {
  override def createReader(partition: InputPartition): PartitionReader[InternalRow] = {
    val r = partition.asInstanceOf[ChangeRange]
    val changes = StateClient.of(r.stateName).changes(r.partition, r.from, r.until)
    val rows = new ChangeRows(schemas)
    new PartitionReader[InternalRow] {
      private var i = -1
      override def next(): Boolean = { i += 1; i < changes.length }
      override def get(): InternalRow = rows.row(changes(i))
      override def close(): Unit = ()
    }
  }
}
