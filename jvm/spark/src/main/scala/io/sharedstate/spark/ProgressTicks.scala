package io.sharedstate.spark

import io.sharedstate.core.EventTime
import io.sharedstate.spark.distributed.DriverState
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.{InputPartition, PartitionReader, PartitionReaderFactory}
import org.apache.spark.sql.connector.read.streaming.Offset
import org.apache.spark.sql.types.{LongType, StructField, StructType, TimestampType}

/**
 * The `progress` table of a State as a stream: one row each time U advances, `__sharedstate_u` = U
 * and `__sharedstate_u_from` = the U of the previous row in microseconds (Long.MinValue for the
 * first). A fetch join unions it with its events: each tick visits the waiting events whose reply
 * times the step [from, U) passed (see [[FetchJoin]]), so Spark runs a micro-batch only when events
 * arrive or U moves, and a waiting event is answered in the batch of the tick that passes it.
 */
object ProgressTicks {
  val Column = "__sharedstate_u"
  val FromColumn = "__sharedstate_u_from"
  val schema: StructType = StructType(Seq(StructField(Column, TimestampType, nullable = false),
    StructField(FromColumn, LongType, nullable = false)))
  /** With option `buckets` = n: each tick as one row per bucket in [0, n) and ring slot the step passed (its group). */
  val groupedSchema: StructType = StructType(schema.fields ++ FetchJoinGroups.keySchema.fields)
  /** U = +infinity (every writer finished) as a timestamp: 9999-12-31 23:59:59.999999 UTC. */
  val Infinity: Long = 253402300799999999L
}

/**
 * One tick: U moved from `from` to `u`; `None` when it did not (Spark plans every source of a batch).
 * With `buckets` > 0 it is read as (bucket, ring slot) rows, see [[FetchJoinGroups]].
 */
final case class ProgressTick(u: Option[Long], from: Long, buckets: Int) extends InputPartition

final class ProgressTickStream(protected val state: DriverState, buckets: Int, fetchJoin: Option[String])
    extends UpdateProgressOffsets {
  override def initialOffset(): Offset = ChangeOffset(EventTime.MinusInfinity)

  override def planInputPartitions(start: Offset, end: Offset): Array[InputPartition] = {
    val (from, until) = range(start, end)
    fetchJoin.foreach(BatchBounds.prepare(_, state.name))
    Array(ProgressTick(if (until > from) Some(math.min(until, ProgressTicks.Infinity)) else None, from, buckets))
  }

  override def createReaderFactory(): PartitionReaderFactory = ProgressTickReaderFactory

  override def commit(end: Offset): Unit = ()

  override def stop(): Unit = ()
}

object ProgressTickReaderFactory extends PartitionReaderFactory {
  override def createReader(partition: InputPartition): PartitionReader[InternalRow] = {
    val tick = partition.asInstanceOf[ProgressTick]
    val rows: Iterator[InternalRow] = tick.u match {
      case None => Iterator.empty
      case Some(u) if tick.buckets <= 0 => Iterator.single(InternalRow(u, tick.from))
      case Some(u) => FetchJoinGroups.ringsPassed(tick.from, u)
        .flatMap(ring => Iterator.range(0, tick.buckets).map(b => InternalRow(u, tick.from, FetchJoinGroups.group(b, ring, tick.buckets))))
    }
    new PartitionReader[InternalRow] {
      private var current: InternalRow = _
      override def next(): Boolean = rows.hasNext && { current = rows.next(); true }
      override def get(): InternalRow = current
      override def close(): Unit = ()
    }
  }
}
