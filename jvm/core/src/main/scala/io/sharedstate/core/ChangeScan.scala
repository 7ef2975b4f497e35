package io.sharedstate.core

import java.util.Arrays
import scala.collection.mutable.ArrayBuffer

/** One applied pair of a State: what its change stream carries. */
final case class Change(key: Array[Byte], time: Long, value: Array[Byte])

/**
 * The applied pairs of one partition with from <= timestamp < until, in timestamp order (ties by
 * key bytes, so a re-read of the same range gives the same sequence). A range below U is final, so
 * reading it again gives the same changes, which is what makes the change stream replayable.
 */
object ChangeScan {
  def between(partition: StatePartition, from: Long, until: Long): Array[Change] = {
    val out = ArrayBuffer.empty[Change]
    if (from < until) partition.foreachEntry { (key, set) =>
      var i = set.firstIndexAtOrAfter(from)
      while (i < set.size && set.timeAt(i) < until) {
        out += Change(key.bytes, set.timeAt(i), set.valueAt(i))
        i += 1
      }
    }
    val changes = out.toArray
    Arrays.sort(changes, Order)
    changes
  }

  /** Timestamp order, ties by unsigned key bytes: the order of a partition's changes everywhere. */
  val Order: java.util.Comparator[Change] = (a: Change, b: Change) => {
    val byTime = java.lang.Long.compare(a.time, b.time)
    if (byTime != 0) byTime else Arrays.compareUnsigned(a.key, b.key)
  }
}
