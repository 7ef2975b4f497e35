package io.sharedstate.core.rules

import io.sharedstate.core.SharedStateException
import io.sharedstate.core.row.{BinaryRow, BinaryRowWriter, ValueType}
import io.sharedstate.core.row.FieldType._
import scala.collection.mutable

/**
 * `append` for lists with set semantics (dynamic graphs): each ARRAY column of the stored value is a
 * set kept in first-insertion order. An incoming STRING element "+x" adds x, "-x" removes it, and any
 * other element is added as it is; numeric elements are added. Other columns take the incoming value.
 * The stored value is the resulting set, so a fetch reads the neighbour list as of t directly.
 */
final class AppendRule(t: ValueType) extends UpdateRule {
  val name = "append"
  private val row = new BinaryRow(t.size)
  private val arrayColumns = t.fields.indices.filter(i => t(i).isInstanceOf[ArrayType])

  if (arrayColumns.isEmpty) throw new SharedStateException(
    s"Update rule 'append' needs an ARRAY column in the value, e.g. 'neighbours ARRAY<STRING>'; the value is <${t.ddl}>.")
  arrayColumns.foreach { i =>
    t(i) match {
      case ArrayType(e) if ArraySet.supports(e) => ()
      case other => throw new SharedStateException(
          s"Update rule 'append' cannot use column '${t.fields(i).name}' of type ${other.sql}: arrays of STRING or numbers are supported.")
    }
  }

  def apply(previous: Array[Byte], incoming: Array[Byte]): Array[Byte] = {
    val w = new BinaryRowWriter(t.size)
    var i = 0
    while (i < t.size) {
      t(i) match {
        case ArrayType(e) =>
          val set = mutable.LinkedHashSet.empty[AnyRef]
          if (previous != null && !row.isNull(previous, 0, i))
            ArraySet.elements(e, row.getArray(previous, 0, i), name).foreach(set += _)
          if (!row.isNull(incoming, 0, i)) ArraySet.elements(e, row.getArray(incoming, 0, i), name).foreach {
            case s: String if s.startsWith("+") => set += s.substring(1)
            case s: String if s.startsWith("-") => set -= s.substring(1)
            case other => set += other
          }
          w.setArray(i, e, set.toArray, t.fields(i).name)
        case other =>
          if (row.isNull(incoming, 0, i)) w.setNull(i) else NumericRule.copy(w, other, row, incoming, i)
      }
      i += 1
    }
    w.toBytes
  }

}
