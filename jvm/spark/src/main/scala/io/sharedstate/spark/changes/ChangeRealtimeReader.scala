package io.sharedstate.spark.changes

import io.sharedstate.spark.cluster.StateClient
import io.sharedstate.spark.rows.ChangeRows

import io.sharedstate.core.Change
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.connector.read.streaming.{PartitionOffset, SupportsRealTimeRead}
import org.apache.spark.sql.connector.read.streaming.SupportsRealTimeRead.RecordStatus

/**
 * The real-time reader of the query's change subscription (local mode): a change is emitted as soon
 * as U passes it (the committer wakes the reader), and Spark asks for at most `timeoutMs` of waiting
 * per call. Its position is the continuous reader's, (from, until, index) over the merged order, so
 * the epoch Spark ends between two changes resumes exactly there.
 */
private[sharedstate] final class ChangeRealtimeReader(tail: ChangeFeedTail, rows: ChangeRows)
    extends SupportsRealTimeRead[InternalRow] {
  private val subscription = StateClient.of(tail.stateName).changeSubscription(tail.subscription)
  private var from = tail.start.from
  private var until = tail.start.until
  private var buffer: Array[Change] = null // the resumed range is read at the first call
  private var index = tail.start.index
  private var current: InternalRow = _

  // startTimeMs is the engine's reference time for the epoch; the wait is bounded by timeoutMs from now.
  override def nextWithTimeout(startTimeMs: java.lang.Long, timeoutMs: java.lang.Long): RecordStatus = {
    val deadline = System.currentTimeMillis() + timeoutMs
    def left: Long = deadline - System.currentTimeMillis()
    try {
      if (buffer == null) {
        // A restart may find U below where the checkpoint was (a durable State still recovering): wait.
        while (subscription.completeThrough < until) {
          if (left <= 0) return RecordStatus.newStatusWithoutArrivalTime(false)
          subscription.awaitBeyond(until - 1, math.min(left, tail.waitMs))
        }
        buffer = if (until > from) subscription.changes(from, until) else Array.empty
      }
      while (index >= buffer.length) {
        if (left <= 0) return RecordStatus.newStatusWithoutArrivalTime(false)
        val reached = subscription.awaitBeyond(until, math.min(left, tail.waitMs))
        if (reached > until) {
          from = until
          until = reached
          buffer = subscription.changes(from, until)
          index = 0
        }
      }
      current = rows.row(buffer(index))
      index += 1
      RecordStatus.newStatusWithoutArrivalTime(true)
    } catch { case _: InterruptedException => RecordStatus.newStatusWithoutArrivalTime(false) }
  }

  override def next(): Boolean = nextWithTimeout(System.currentTimeMillis(), 0L).hasRecord

  override def get(): InternalRow = current

  override def getOffset: PartitionOffset = ChangePosition(ChangePosition.Merged, from, until, index)

  override def close(): Unit = ()
}
