package io.sharedstate.core

import java.util.Arrays

/**
 * The versions of one key: (timestamp, value) pairs sorted by timestamp. Immutable, so readers
 * never lock; the single applier of a partition publishes a new ValueSet for each change.
 */
final class ValueSet private (private val times: Array[Long], private val values: Array[Array[Byte]]) {

  def size: Int = times.length
  def timeAt(i: Int): Long = times(i)
  def valueAt(i: Int): Array[Byte] = values(i)

  /** Index of the pair with the largest timestamp <= t, or -1. */
  def latestIndex(t: Long): Int = {
    val i = Arrays.binarySearch(times, t)
    if (i >= 0) i else -(i + 1) - 1
  }

  /** This set with `value` stored at `t`; a pair already at `t` is replaced. */
  def withPair(t: Long, value: Array[Byte]): ValueSet = {
    val i = Arrays.binarySearch(times, t)
    if (i >= 0) {
      val vs = values.clone()
      vs(i) = value
      new ValueSet(times, vs)
    } else {
      val at = -(i + 1)
      val ts = new Array[Long](times.length + 1)
      val vs = new Array[Array[Byte]](times.length + 1)
      System.arraycopy(times, 0, ts, 0, at)
      System.arraycopy(values, 0, vs, 0, at)
      ts(at) = t
      vs(at) = value
      System.arraycopy(times, at, ts, at + 1, times.length - at)
      System.arraycopy(values, at, vs, at + 1, values.length - at)
      new ValueSet(ts, vs)
    }
  }

  /** Bytes of timestamps and values held (keys are counted by the partition). */
  def payloadBytes: Long = {
    var n = 8L * times.length
    var i = 0
    while (i < values.length) { n += values(i).length; i += 1 }
    n
  }
}

object ValueSet {
  val Empty: ValueSet = new ValueSet(Array.emptyLongArray, Array.empty[Array[Byte]])
}
