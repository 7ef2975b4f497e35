package io.sharedstate.core

import scala.collection.mutable.ArrayBuffer

/** The updates one writer task produced for one epoch, plus the rows it had to reject. */
final class UpdateBatch {
  private[core] val keys = ArrayBuffer.empty[Array[Byte]]
  private[core] val times = ArrayBuffer.empty[Long]
  private[core] val values = ArrayBuffer.empty[Array[Byte]]
  private[core] val rejected = ArrayBuffer.empty[RejectedUpdate]
  private var maxTime = EventTime.MinusInfinity

  def add(key: Array[Byte], time: Long, value: Array[Byte]): Unit = {
    keys += key; times += time; values += value
    if (time > maxTime) maxTime = time
  }

  def reject(r: RejectedUpdate): Unit = rejected += r

  def size: Int = times.length
  def rejectedCount: Int = rejected.length
  /** Largest event time among accepted rows, or -infinity when there is none. */
  def maxEventTime: Long = maxTime
}
