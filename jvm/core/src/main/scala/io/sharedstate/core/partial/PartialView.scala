package io.sharedstate.core.partial

import io.sharedstate.core.row.ValueType

/**
 * What a reader sees of a partial State's stored value: the instances merged ([[merged]], what
 * global fetches, as-of reads and the change stream give), or one instance ([[instance]], a local
 * fetch). Serializable so plans can carry it: it travels as the merge's name and is resolved again
 * where it is used (a merge need not be serializable).
 */
private[sharedstate] final class PartialView(val state: String, val mergeName: String, val valueType: ValueType)
    extends Serializable {
  @transient lazy val merge: PartialMerge = PartialMerge.resolve(state, mergeName, valueType)

  // Equal views make equal StateSchemas, so plans that carry them compare equal when rebuilt.
  override def equals(other: Any): Boolean = other match {
    case v: PartialView => v.state == state && v.mergeName == mergeName && v.valueType == valueType
    case _ => false
  }
  override def hashCode(): Int = (state, mergeName, valueType).hashCode()

  /** Every instance's value merged in instance order; null for a value with no instance. */
  def merged(stored: Array[Byte]): Array[Byte] = {
    if (stored == null) return null
    val vs = PartialValues.values(stored)
    if (vs.isEmpty) null
    else {
      var acc = vs(0)
      var i = 1
      while (i < vs.length) { acc = merge.merge(acc, vs(i)); i += 1 }
      acc
    }
  }

  /** The value of `instance`, null when it has none. */
  def instance(stored: Array[Byte], instance: Int): Array[Byte] =
    if (stored == null) null else PartialValues.valueOf(stored, instance)
}
