package io.sharedstate.spark.changes

import io.sharedstate.spark.cluster.StateController
import io.sharedstate.spark.rows.ProgressTicks

import io.sharedstate.core.EventTime
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming.Offset

/** One tick: U moved from `from` to `u`; `None` when it did not (Spark plans every source of a batch). */
private[sharedstate] final case class ProgressTick(u: Option[Long], from: Long) extends InputPartition

/**
 * The `progress` table of a State as a stream (see [[ProgressTicks]]): one row each time U advances.
 * A fetch join reads its own instance (fetch.batch.FetchTickTable), which also records its batch
 * bounds when a batch is planned ([[planned]]).
 */
private[sharedstate] class ProgressTickStream(protected val state: StateController) extends UpdateProgressOffsets {
  override def initialOffset(): Offset = ChangeOffset(EventTime.MinusInfinity)

  override def planInputPartitions(start: Offset, end: Offset): Array[InputPartition] = {
    val (from, until) = range(start, end)
    planned()
    Array(ProgressTick(if (until > from) Some(math.min(until, ProgressTicks.Infinity)) else None, from))
  }

  /** Called on the driver's stream thread when Spark plans a micro-batch of this stream. */
  protected def planned(): Unit = ()

  override def createReaderFactory(): PartitionReaderFactory = ProgressTickReaderFactory

  override def commit(end: Offset): Unit = ()

  override def stop(): Unit = ()
}

private[sharedstate] object ProgressTickReaderFactory extends PartitionReaderFactory {
  override def createReader(partition: InputPartition): PartitionReader[InternalRow] = {
    val tick = partition.asInstanceOf[ProgressTick]
    val rows: Iterator[InternalRow] = tick.u.iterator.map(u => InternalRow(u, tick.from))
    new PartitionReader[InternalRow] {
      private var current: InternalRow = _
      override def next(): Boolean = rows.hasNext && { current = rows.next(); true }
      override def get(): InternalRow = current
      override def close(): Unit = ()
    }
  }
}
