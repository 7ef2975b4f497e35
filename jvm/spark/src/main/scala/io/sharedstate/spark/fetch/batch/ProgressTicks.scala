package io.sharedstate.spark.fetch.batch

import io.sharedstate.spark.changes.{ChangeOffset, UpdateProgressOffsets}
import io.sharedstate.spark.cluster.DriverState

import io.sharedstate.core.EventTime
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming.Offset
import org.apache.spark.sql.types.{LongType, StructField, StructType, TimestampType}

/**
 * The `progress` table of a State as a stream: one row each time U advances, `__sharedstate_u` = U
 * and `__sharedstate_u_from` = the U of the previous row in microseconds (Long.MinValue for the
 * first). A fetch join unions it with its events (see [[FetchJoin]]), so Spark runs a micro-batch when
 * events arrive or U moves, and a waiting event is answered in the first batch after U passes it.
 */
object ProgressTicks {
  val Column = "__sharedstate_u"
  val FromColumn = "__sharedstate_u_from"
  val schema: StructType = StructType(Seq(StructField(Column, TimestampType, nullable = false),
    StructField(FromColumn, LongType, nullable = false)))
  /** U = +infinity (every writer finished) as a timestamp: 9999-12-31 23:59:59.999999 UTC. */
  val Infinity: Long = 253402300799999999L
}

/** One tick: U moved from `from` to `u`; `None` when it did not (Spark plans every source of a batch). */
final case class ProgressTick(u: Option[Long], from: Long) extends InputPartition

final class ProgressTickStream(protected val state: DriverState, fetchJoin: Option[String])
    extends UpdateProgressOffsets {
  override def initialOffset(): Offset = ChangeOffset(EventTime.MinusInfinity)

  override def planInputPartitions(start: Offset, end: Offset): Array[InputPartition] = {
    val (from, until) = range(start, end)
    fetchJoin.foreach(BatchBounds.prepare(_, state.name))
    Array(ProgressTick(if (until > from) Some(math.min(until, ProgressTicks.Infinity)) else None, from))
  }

  override def createReaderFactory(): PartitionReaderFactory = ProgressTickReaderFactory

  override def commit(end: Offset): Unit = ()

  override def stop(): Unit = ()
}

object ProgressTickReaderFactory extends PartitionReaderFactory {
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
