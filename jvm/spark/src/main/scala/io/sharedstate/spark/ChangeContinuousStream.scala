package io.sharedstate.spark

import io.sharedstate.core.{Change, ChangeSubscription, EventTime, SharedStateException}
import io.sharedstate.spark.distributed.{DriverState, StateClient}
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.InputPartition
import org.apache.spark.sql.connector.read.streaming.{ContinuousPartitionReader, ContinuousPartitionReaderFactory,
  ContinuousStream, Offset, PartitionOffset}

/**
 * Where one continuous reader is: it has read `index` changes of the range [from, until) (a range
 * below U, so re-reading it after a restart gives the same changes in the same order). `partition`
 * is the State partition it reads (cluster mode), or [[ChangePosition.Merged]]: every partition,
 * merged by the change feed in (timestamp, partition, key) order (local mode).
 */
final case class ChangePosition(partition: Int, from: Long, until: Long, index: Int) extends PartitionOffset {
  def json: String = s"$partition:$from:$until:$index"
}

object ChangePosition {
  val Merged: Int = -1

  def parse(text: String): ChangePosition = text.split(':') match {
    case Array(p, f, u, i) => ChangePosition(p.toInt, f.toLong, u.toLong, i.toInt)
    case _ => throw new IllegalArgumentException(s"not a change-stream position: $text")
  }
}

/** A continuous offset of a change stream: the position of every partition. */
final case class ChangePositions(positions: Seq[ChangePosition]) extends Offset {
  override def json(): String = positions.sortBy(_.partition).map(_.json).mkString(",")
}

/** A continuous reader of one State partition, polling its host's U and scanning (cluster mode). */
final case class ChangeTail(stateName: String, start: ChangePosition, pollMs: Long, host: Option[String])
  extends InputPartition {
  override def preferredLocations(): Array[String] = host.toArray
}

/** The continuous reader of the query's change subscription (local mode). */
final case class ChangeFeedTail(stateName: String, subscription: Long, start: ChangePosition, waitMs: Long)
  extends InputPartition

/**
 * The change stream of a State in continuous mode; each newly final range [previous U, U) is emitted
 * as soon as U passes it, in timestamp order, and F follows the committed epochs' positions.
 *
 * Local mode: one long-running reader on the query's change subscription (core ChangeFeed, through
 * the ESG), woken by the committer when U advances; its position is (from, until, index) over the
 * merged order, so a restart opens a subscription at `from` and skips `index` changes exactly.
 * Cluster mode: one reader per State partition that polls its host's U and scans the new range there
 * (the feed does not run on hosts yet, see docs/change-stream.md).
 */
final class ChangeContinuousStream(state: DriverState, schemas: StateSchemas, starting: String, checkpointLocation: String)
  extends ContinuousStream {

  private val reader = ChangeStreams.register(state, checkpointLocation)
  private val local = state.owners.isEmpty
  private var subscription: ChangeSubscription = null // local mode

  override def initialOffset(): Offset = {
    val start = ChangeStreams.start(state, starting)
    if (local) ChangePositions(Seq(ChangePosition(ChangePosition.Merged, start, start, 0)))
    else ChangePositions(Seq.tabulate(state.partitionCount)(p => ChangePosition(p, start, start, 0)))
  }

  override def deserializeOffset(json: String): Offset =
    ChangePositions(json.split(',').filter(_.nonEmpty).map(ChangePosition.parse).toSeq)

  override def planInputPartitions(start: Offset): Array[InputPartition] =
    start.asInstanceOf[ChangePositions].positions match {
      case Seq(merged) if merged.partition == ChangePosition.Merged =>
        ChangeStreams.subscription(state, subscription, merged.from) match {
          case Some(sub) =>
            subscription = sub
            Array(ChangeFeedTail(state.name, sub.id, merged, ChangeContinuousStream.WaitMs))
          case None if merged.index == 0 && merged.from == merged.until => // a fresh start: any plan fits
            perPartition(Seq.tabulate(state.partitionCount)(p => ChangePosition(p, merged.from, merged.from, 0)))
          case None => throw new SharedStateException(s"The continuous change stream of State '${state.name}' " +
              "was checkpointed in local mode (one merged reader) and cannot resume mid-range in a cluster; restart " +
              "it with a new checkpointLocation.")
        }
      // Cluster mode, or a checkpoint written by per-partition readers: keep reading per partition.
      case positions => perPartition(positions)
    }

  private def perPartition(positions: Seq[ChangePosition]): Array[InputPartition] = {
    val client = StateClient.of(state.name)
    positions.sortBy(_.partition)
      .map(p => ChangeTail(state.name, p, ChangeContinuousStream.PollMs, client.preferredHost(p.partition)): InputPartition)
      .toArray
  }

  override def mergeOffsets(offsets: Array[PartitionOffset]): Offset =
    ChangePositions(offsets.map(_.asInstanceOf[ChangePosition]).toSeq)

  override def createContinuousReaderFactory(): ContinuousPartitionReaderFactory = new ChangeTailReaderFactory(schemas)

  // Below the start of every partition's current range, all changes are read.
  override def commit(end: Offset): Unit = {
    val below = end.asInstanceOf[ChangePositions].positions.map(_.from).min
    ChangeStreams.advance(state, reader, below)
    if (subscription != null) subscription.commit(below)
  }

  override def stop(): Unit = if (subscription != null) { subscription.close(); subscription = null }
}

object ChangeContinuousStream {
  /** How often an idle per-partition reader looks at U (cluster mode). */
  val PollMs = 10L
  /** How long the merged reader waits for U at a time before it looks again (it is woken when U moves). */
  val WaitMs = 200L
}

final class ChangeTailReaderFactory(schemas: StateSchemas) extends ContinuousPartitionReaderFactory {
  override def createReader(partition: InputPartition): ContinuousPartitionReader[InternalRow] = partition match {
    case feed: ChangeFeedTail => new ChangeFeedTailReader(feed, new ChangeRows(schemas))
    case tail: ChangeTail => new ChangeTailReader(tail, new ChangeRows(schemas))
  }
}

/** Reads the query's change subscription; blocks in next() until U passes more (Spark interrupts it on stop). */
final class ChangeFeedTailReader(tail: ChangeFeedTail, rows: ChangeRows) extends ContinuousPartitionReader[InternalRow] {
  private val subscription = StateClient.of(tail.stateName).changeSubscription(tail.subscription)
  private var from = tail.start.from
  private var until = tail.start.until
  private var buffer: Array[Change] = null // the resumed range is read at the first next()
  private var index = tail.start.index
  private var current: InternalRow = _

  override def next(): Boolean = try {
    if (buffer == null) {
      // A restart may find U below where the checkpoint was (a durable State still recovering): wait.
      while (subscription.completeThrough < until) subscription.awaitBeyond(until - 1, tail.waitMs)
      buffer = if (until > from) subscription.changes(from, until) else Array.empty
    }
    while (index >= buffer.length) {
      val reached = subscription.awaitBeyond(until, tail.waitMs)
      if (reached > until) {
        from = until
        until = reached
        buffer = subscription.changes(from, until)
        index = 0
      }
    }
    current = rows.row(buffer(index))
    index += 1
    true
  } catch { case _: InterruptedException => false }

  override def get(): InternalRow = current

  override def getOffset: PartitionOffset = ChangePosition(ChangePosition.Merged, from, until, index)

  override def close(): Unit = ()
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
