package io.sharedstate.core.partial

import io.sharedstate.core.SharedStateException
import io.sharedstate.core.row.Bytes

/**
 * The stored value of a partial State: one value per instance (a writer task's partition, or a
 * writer query), in ascending instance order. Each version of a key holds every instance's value as
 * of that time, so a global fetch reads one version and merges it, and a local fetch picks one
 * instance. Layout (little-endian, like the binary rows): instance count n, the n instances, the n
 * end offsets of the values, then the values end to end. An update carries one instance.
 */
private[sharedstate] object PartialValues {
  val Magic: Int = 0x54524150 // "PART"
  private val H = 8 // magic and count

  /** The incoming form of an update of `instance` to `value` (the sink makes one per row: one allocation). */
  def single(instance: Int, value: Array[Byte]): Array[Byte] = {
    val out = new Array[Byte](H + 8 + value.length)
    Bytes.putInt(out, 0, Magic)
    Bytes.putInt(out, 4, 1)
    Bytes.putInt(out, H, instance)
    Bytes.putInt(out, H + 4, value.length)
    System.arraycopy(value, 0, out, H + 8, value.length)
    out
  }

  def encode(instances: Array[Int], values: Array[Array[Byte]]): Array[Byte] = {
    val n = instances.length
    val header = H + 8 * n
    val out = new Array[Byte](header + values.map(_.length).sum)
    Bytes.putInt(out, 0, Magic)
    Bytes.putInt(out, 4, n)
    var end = 0
    var i = 0
    while (i < n) {
      Bytes.putInt(out, H + 4 * i, instances(i))
      System.arraycopy(values(i), 0, out, header + end, values(i).length)
      end += values(i).length
      Bytes.putInt(out, H + 4 * n + 4 * i, end)
      i += 1
    }
    out
  }

  def count(bytes: Array[Byte]): Int = {
    if (bytes == null || bytes.length < H || Bytes.getInt(bytes, 0) != Magic) throw notPartial(bytes)
    val n = Bytes.getInt(bytes, 4)
    if (n < 0 || H + 8L * n > bytes.length) throw notPartial(bytes)
    n
  }

  def instances(bytes: Array[Byte]): Array[Int] = {
    val n = count(bytes); Array.tabulate(n)(i => Bytes.getInt(bytes, H + 4 * i))
  }

  def values(bytes: Array[Byte]): Array[Array[Byte]] = {
    val n = count(bytes)
    Array.tabulate(n)(valueAt(bytes, n, _))
  }

  /** The value of `instance`, or null when it has none. */
  def valueOf(bytes: Array[Byte], instance: Int): Array[Byte] = {
    val n = count(bytes)
    var i = 0
    while (i < n) {
      if (Bytes.getInt(bytes, H + 4 * i) == instance) return valueAt(bytes, n, i)
      i += 1
    }
    null
  }

  /** `previous` (null = no instance yet) with `instance` set to `value`, instances kept in order. */
  def withValue(previous: Array[Byte], instance: Int, value: Array[Byte]): Array[Byte] =
    if (previous == null) single(instance, value)
    else {
      val is = instances(previous)
      val vs = values(previous)
      val at = java.util.Arrays.binarySearch(is, instance)
      if (at >= 0) { vs(at) = value; encode(is, vs) }
      else {
        val pos = -at - 1
        encode((is.take(pos) :+ instance) ++ is.drop(pos), (vs.take(pos) :+ value) ++ vs.drop(pos))
      }
    }

  private def valueAt(bytes: Array[Byte], n: Int, i: Int): Array[Byte] = {
    val header = H + 8 * n
    val start = if (i == 0) 0 else Bytes.getInt(bytes, H + 4 * n + 4 * (i - 1))
    val end = Bytes.getInt(bytes, H + 4 * n + 4 * i)
    java.util.Arrays.copyOfRange(bytes, header + start, header + end)
  }

  private def notPartial(bytes: Array[Byte]) = new SharedStateException(
    s"A value of ${if (bytes == null) "null" else s"${bytes.length} bytes"} is not a partial State's instance " +
      "set: updates of a partial State come through its sink, which tags each with the writer's instance.")
}
