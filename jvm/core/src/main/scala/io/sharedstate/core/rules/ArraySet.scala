package io.sharedstate.core.rules

import io.sharedstate.core.SharedStateException
import io.sharedstate.core.row.{BinaryArray, FieldType}
import io.sharedstate.core.row.FieldType._

/**
 * Arrays read as sets of boxed elements, shared by the `append` update rule and the `union` partial
 * merge: which element types they take, and an array's non-null elements.
 */
private[sharedstate] object ArraySet {

  /** Whether an ARRAY of `e` can be read as a set (STRING, numbers, TIMESTAMP). */
  def supports(e: FieldType): Boolean = e == StringType || e.isNumeric || e == TimestampType

  /** The non-null elements of `a`, boxed; `what` names the rule or merge in the error for another type. */
  def elements(e: FieldType, a: BinaryArray, what: String): Iterator[AnyRef] =
    (0 until a.length).iterator.filterNot(a.isNull).map { j =>
      e match {
        case StringType => a.getString(j)
        case LongType | TimestampType => java.lang.Long.valueOf(a.getLong(j))
        case IntType => java.lang.Integer.valueOf(a.getInt(j))
        case DoubleType => java.lang.Double.valueOf(a.getDouble(j))
        case FloatType => java.lang.Float.valueOf(a.getFloat(j))
        case other => throw new SharedStateException(s"Arrays of ${other.sql} are not supported by '$what'.")
      }
    }
}
