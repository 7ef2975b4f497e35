package io.sharedstate.spark.rows

import io.sharedstate.core.StatePartition
import scala.collection.mutable.ArrayBuffer

/**
 * One partition as of a time: for each key, the newest applied pair at or before it. Only applied
 * pairs are read and every applied pair is below U, so the answer never changes once given.
 */
private[sharedstate] object AsOfPairs {
  def of(partition: StatePartition, asOf: Long): StoredPairs = {
    val keys = ArrayBuffer.empty[Array[Byte]]
    val times = ArrayBuffer.empty[Long]
    val values = ArrayBuffer.empty[Array[Byte]]
    partition.foreachEntry { (key, set) =>
      val i = set.latestIndex(asOf)
      if (i >= 0) { keys += key.bytes; times += set.timeAt(i); values += set.valueAt(i) }
    }
    StoredPairs(keys.toArray, times.toArray, values.toArray)
  }
}
