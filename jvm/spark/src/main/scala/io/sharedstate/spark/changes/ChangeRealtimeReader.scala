package io.sharedstate.spark.changes

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.streaming.{PartitionOffset, SupportsRealTimeRead}
import org.apache.spark.sql.connector.read.streaming.SupportsRealTimeRead.RecordStatus

/**
 * A change reader in real-time mode: the continuous reader of the same input partition (the local
 * subscription's, a cluster host's, or a group read by scan) with Spark's `timeoutMs` as its deadline,
 * so a change is emitted as soon as U passes it and the epoch ends when Spark says. Its position is
 * the continuous reader's, (from, until, index) over the merged order, so an epoch Spark ends between
 * two changes resumes exactly there.
 */
private[sharedstate] final class ChangeRealtimeReader(tail: ChangeTailing) extends SupportsRealTimeRead[InternalRow] {

  // startTimeMs is the engine's reference time for the epoch; the wait is bounded by timeoutMs from now.
  override def nextWithTimeout(startTimeMs: java.lang.Long, timeoutMs: java.lang.Long): RecordStatus =
    RecordStatus.newStatusWithoutArrivalTime(tail.nextBefore(System.nanoTime() + timeoutMs * 1000000L))

  override def next(): Boolean = tail.nextBefore(System.nanoTime())

  override def get(): InternalRow = tail.get()

  override def getOffset: PartitionOffset = tail.getOffset

  override def close(): Unit = tail.close()
}
