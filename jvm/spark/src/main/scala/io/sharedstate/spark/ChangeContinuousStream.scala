package io.sharedstate.spark

import io.sharedstate.core.{Change, EventTime}
import io.sharedstate.spark.distributed.{DriverState, StateClient}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.InputPartition
import org.apache.spark.sql.connector.read.streaming.{ContinuousPartitionReader, ContinuousPartitionReaderFactory,
  ContinuousStream, Offset, PartitionOffset}

/**
 * Where one partition's continuous reader is: it has read `index` changes of the range [from, until)
 * (a range below U, so re-reading it after a restart gives the same changes in the same order).
 */
final case class ChangePosition(partition: Int, from: Long, until: Long, index: Int) extends PartitionOffset {
  def json: String = s"$partition:$from:$until:$index"
}

object ChangePosition {
  def parse(text: String): ChangePosition = text.split(':') match {
    case Array(p, f, u, i) => ChangePosition(p.toInt, f.toLong, u.toLong, i.toInt)
    case _ => throw new IllegalArgumentException(s"not a change-stream position: $text")
  }
}

/** A continuous offset of a change stream: the position of every partition. */
final case class ChangePositions(positions: Seq[ChangePosition]) extends Offset {
  override def json(): String = positions.sortBy(_.partition).map(_.json).mkString(",")
}

final case class ChangeTail(stateName: String, start: ChangePosition, pollMs: Long) extends InputPartition

/**
 * The change stream of a State in continuous mode: one long-running reader per State partition,
 * which emits each newly final range [previous U, U) as soon as U passes it, in timestamp order.
 * F follows the committed epochs' positions.
 */
final class ChangeContinuousStream(state: DriverState, schemas: StateSchemas, starting: String, checkpointLocation: String)
  extends ContinuousStream {

  private val reader = ChangeStreams.register(state, checkpointLocation)

  override def initialOffset(): Offset = {
    val start = ChangeStreams.start(state, starting)
    ChangePositions(Seq.tabulate(state.partitionCount)(p => ChangePosition(p, start, start, 0)))
  }

  override def deserializeOffset(json: String): Offset =
    ChangePositions(json.split(',').filter(_.nonEmpty).map(ChangePosition.parse).toSeq)

  override def planInputPartitions(start: Offset): Array[InputPartition] =
    start.asInstanceOf[ChangePositions].positions.sortBy(_.partition)
      .map(p => ChangeTail(state.name, p, ChangeContinuousStream.PollMs): InputPartition).toArray

  override def mergeOffsets(offsets: Array[PartitionOffset]): Offset =
    ChangePositions(offsets.map(_.asInstanceOf[ChangePosition]).toSeq)

  override def createContinuousReaderFactory(): ContinuousPartitionReaderFactory = new ChangeTailReaderFactory(schemas)

  // Below the start of every partition's current range, all changes are read.
  override def commit(end: Offset): Unit =
    ChangeStreams.advance(state, reader, end.asInstanceOf[ChangePositions].positions.map(_.from).min)

  override def stop(): Unit = ()
}

object ChangeContinuousStream {
  /** How often an idle reader looks at U. */
  val PollMs = 10L
}

final class ChangeTailReaderFactory(schemas: StateSchemas) extends ContinuousPartitionReaderFactory {
  override def createReader(partition: InputPartition): ContinuousPartitionReader[InternalRow] =
    new ChangeTailReader(partition.asInstanceOf[ChangeTail], new ChangeRows(schemas))
}

/** Blocks in next() until a change is final; Spark interrupts it when the query stops. */
final class ChangeTailReader(tail: ChangeTail, rows: ChangeRows) extends ContinuousPartitionReader[InternalRow] {
  private val state: StateClient = StateClient.of(tail.stateName)
  private var from = tail.start.from
  private var until = tail.start.until
  private var buffer: Array[Change] =
    if (tail.start.until > tail.start.from) state.changes(tail.start.partition, from, until) else Array.empty
  private var index = tail.start.index
  private var current: InternalRow = _

  override def next(): Boolean = {
    while (index >= buffer.length) {
      val u = state.updateProgressAt(tail.start.partition)
      if (u > until && u != EventTime.MinusInfinity) {
        from = until
        until = u
        buffer = state.changes(tail.start.partition, from, until)
        index = 0
      } else {
        try Thread.sleep(tail.pollMs) catch { case _: InterruptedException => return false }
      }
    }
    current = rows.row(buffer(index))
    index += 1
    true
  }

  override def get(): InternalRow = current

  override def getOffset: PartitionOffset = ChangePosition(tail.start.partition, from, until, index)

  override def close(): Unit = ()
}
