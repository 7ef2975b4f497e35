package io.sharedstate.core

import java.util.Arrays
import scala.collection.mutable.ArrayBuffer

/**
 * The updates one writer task produced for one epoch, plus the rows it had to reject. Times are kept
 * in a primitive array (no boxing per row). Filled by one task thread, then handed to the State.
 */
final class UpdateBatch {
  private var keyArr = new Array[Array[Byte]](16)
  private var timeArr = new Array[Long](16)
  private var valueArr = new Array[Array[Byte]](16)
  private var n = 0
  private var byteCount = 0L
  private[core] val rejected = ArrayBuffer.empty[RejectedUpdate]
  private var maxTime = EventTime.MinusInfinity

  def add(key: Array[Byte], time: Long, value: Array[Byte]): Unit = {
    if (key == null || value == null) throw new SharedStateException(
      "UpdateBatch.add needs a key and a value row; reject rows with a null key through UpdateBatch.reject.")
    if (n == timeArr.length) {
      keyArr = Arrays.copyOf(keyArr, n * 2); timeArr = Arrays.copyOf(timeArr, n * 2);
      valueArr = Arrays.copyOf(valueArr, n * 2)
    }
    keyArr(n) = key; timeArr(n) = time; valueArr(n) = value
    n += 1
    byteCount += key.length + value.length + MemoryEstimate.PerStaged
    if (time > maxTime) maxTime = time
  }

  def reject(r: RejectedUpdate): Unit = rejected += r
  def rejectedUpdates: Seq[RejectedUpdate] = rejected.toSeq

  def keyAt(i: Int): Array[Byte] = keyArr(i)
  def timeAt(i: Int): Long = timeArr(i)
  def valueAt(i: Int): Array[Byte] = valueArr(i)

  private[core] def keys(i: Int): Array[Byte] = keyArr(i)
  private[core] def times(i: Int): Long = timeArr(i)
  private[core] def values(i: Int): Array[Byte] = valueArr(i)

  def size: Int = n

  /** The rows the task rejected itself (a null key or time), in the order they came. */
  def rejectedRows: Seq[RejectedUpdate] = rejected.toSeq
  def rejectedCount: Int = rejected.length

  /** Estimated bytes this batch holds while staged. */
  def bytes: Long = byteCount

  /** Largest event time among accepted rows, or -infinity when there is none. */
  def maxEventTime: Long = maxTime
}
