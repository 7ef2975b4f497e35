package io.sharedstate.spark

import io.sharedstate.core.EventTime
import io.sharedstate.spark.distributed.DriverState
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming.Offset
import org.apache.spark.sql.types.{StructField, StructType, TimestampType}

/**
 * The `progress` table of a State as a stream: one row, `__sharedstate_u` = U, each time U advances.
 * A fetch join unions it with its events and puts a zero-delay watermark on it, so the query's
 * watermark follows U: a waiting row's event-time timeout fires once U has passed it, and Spark runs
 * a micro-batch only when events arrive or U moves (never back to back while rows wait).
 */
object ProgressTicks {
  val Column = "__sharedstate_u"
  val schema: StructType = StructType(Seq(StructField(Column, TimestampType, nullable = false)))
  /** U = +infinity (every writer finished) as a timestamp: 9999-12-31 23:59:59.999999 UTC. */
  val Infinity: Long = 253402300799999999L
}

/** One tick: U moved to `u`; `None` when it did not (Spark plans every source of a batch). */
final case class ProgressTick(u: Option[Long]) extends InputPartition

final class ProgressTickStream(protected val state: DriverState) extends UpdateProgressOffsets {
  override def initialOffset(): Offset = ChangeOffset(EventTime.MinusInfinity)

  override def planInputPartitions(start: Offset, end: Offset): Array[InputPartition] = {
    val (from, until) = range(start, end)
    Array(ProgressTick(if (until > from) Some(math.min(until, ProgressTicks.Infinity)) else None))
  }

  override def createReaderFactory(): PartitionReaderFactory = ProgressTickReaderFactory

  override def commit(end: Offset): Unit = ()

  override def stop(): Unit = ()
}

object ProgressTickReaderFactory extends PartitionReaderFactory {
  override def createReader(partition: InputPartition): PartitionReader[InternalRow] = new PartitionReader[InternalRow] {
    private val tick = partition.asInstanceOf[ProgressTick].u
    private var done = tick.isEmpty
    override def next(): Boolean = if (done) false else { done = true; true }
    override def get(): InternalRow = InternalRow(tick.get)
    override def close(): Unit = ()
  }
}
