package io.sharedstate.core.partial

import io.sharedstate.core.SharedStateException
import io.sharedstate.core.row.{BinaryRow, BinaryRowWriter, FieldType, ValueType}
import io.sharedstate.core.row.FieldType._
import io.sharedstate.core.rules.ArraySet
import scala.collection.mutable

/**
 * `union`: every column is an array read as a set; the merge keeps `a`'s elements in their order,
 * then `b`'s that `a` lacks. A null array is the empty set.
 */
private[partial] final class UnionMerge(t: ValueType) extends PartialMerge {
  val name = "union"
  private val row = new BinaryRow(t.size)
  private val elements: Array[FieldType] = t.fields.map { f =>
    f.dataType match {
      case ArrayType(e) if ArraySet.supports(e) => e
      case other => throw new SharedStateException(
          s"'union' merges arrays as sets: column '${f.name}' of type ${other.sql} is not an ARRAY of STRING or numbers.")
    }
  }.toArray

  def merge(a: Array[Byte], b: Array[Byte]): Array[Byte] = {
    val w = new BinaryRowWriter(t.size)
    var i = 0
    while (i < t.size) {
      val set = mutable.LinkedHashSet.empty[AnyRef]
      if (!row.isNull(a, 0, i)) set ++= ArraySet.elements(elements(i), row.getArray(a, 0, i), name)
      if (!row.isNull(b, 0, i)) set ++= ArraySet.elements(elements(i), row.getArray(b, 0, i), name)
      w.setArray(i, elements(i), set.toArray, t.fields(i).name)
      i += 1
    }
    w.toBytes
  }

}
