package io.sharedstate.core.rules

import io.sharedstate.core.SharedStateException
import io.sharedstate.core.row.{BinaryArray, BinaryRow, BinaryRowWriter, Bytes, FieldType, ValueType}
import io.sharedstate.core.row.FieldType._

/**
 * `sum`/`add`, `min` and `max`: combine the previous and incoming value column by column, reading
 * the binary rows in place. Numeric arrays (gradients) combine element-wise; a shorter array or a
 * null element counts as absent, so the result has the longer length. A null column takes the other
 * side's value. `min`/`max` also order STRING (by code point) and TIMESTAMP columns.
 */
final class NumericRule(val name: String, t: ValueType, op: NumericOp) extends UpdateRule {
  NumericRule.check(name, t, op)
  private val row = new BinaryRow(t.size)

  def apply(previous: Array[Byte], incoming: Array[Byte]): Array[Byte] =
    if (previous == null) incoming else NumericRule.combine(t, row, op, previous, incoming)
}

object NumericRule {
  def check(rule: String, t: ValueType, op: NumericOp): Unit = t.fields.foreach { f =>
    val ok = f.dataType match {
      case d if d.isNumeric => true
      case ArrayType(e) if e.isNumeric => true
      case StringType | TimestampType => op.orders
      case _ => false
    }
    if (!ok) throw new SharedStateException(
      s"Update rule '$rule' cannot combine column '${f.name}' of type ${f.dataType.sql}: it needs " +
        (if (op.orders) "numbers, numeric arrays, STRING or TIMESTAMP columns."
         else "numbers or numeric arrays (BIGINT, INT, DOUBLE, FLOAT, ARRAY<...> of those)."))
  }

  /** `previous op incoming`, column by column; both rows are of type `t`. */
  def combine(
      t: ValueType, row: BinaryRow, op: NumericOp, previous: Array[Byte], incoming: Array[Byte]): Array[Byte] = {
    val w = new BinaryRowWriter(t.size)
    var i = 0
    while (i < t.size) {
      val pn = row.isNull(previous, 0, i)
      val in = row.isNull(incoming, 0, i)
      if (pn && in) w.setNull(i)
      else if (in) copy(w, t(i), row, previous, i)
      else if (pn) copy(w, t(i), row, incoming, i)
      else t(i) match {
        case LongType | TimestampType =>
          w.setLong(i, op.longs(row.getLong(previous, 0, i), row.getLong(incoming, 0, i)))
        case IntType => w.setInt(i, op.longs(row.getInt(previous, 0, i), row.getInt(incoming, 0, i)).toInt)
        case DoubleType => w.setDouble(i, op.doubles(row.getDouble(previous, 0, i), row.getDouble(incoming, 0, i)))
        case FloatType => w.setFloat(i, op.doubles(row.getFloat(previous, 0, i), row.getFloat(incoming, 0, i)).toFloat)
        case StringType =>
          val a = row.getString(previous, 0, i)
          val b = row.getString(incoming, 0, i)
          val c = a.compareTo(b)
          w.setString(i, if ((op == NumericOp.Min) == (c <= 0)) a else b)
        case ArrayType(e) => w.setVariable(i, arrays(e, op, row.getArray(previous, 0, i), row.getArray(incoming, 0, i)))
        case other =>
          throw new SharedStateException(s"Column '${t.fields(i).name}' of type ${other.sql} is not numeric.")
      }
      i += 1
    }
    w.toBytes
  }

  /** Copies column i of `from` unchanged (whole slot, or the variable-length bytes). */
  private[rules] def copy(w: BinaryRowWriter, ft: FieldType, row: BinaryRow, from: Array[Byte], i: Int): Unit =
    ft match {
      case StringType | ArrayType(_) | Opaque(_) =>
        val at = row.varOffset(from, 0, i)
        w.setVariable(i, java.util.Arrays.copyOfRange(from, at, at + row.varSize(from, 0, i)))
      case _ => w.setLong(i, row.getLong(from, 0, i)) // the whole 8-byte slot, as written
    }

  private def arrays(e: FieldType, op: NumericOp, a: BinaryArray, b: BinaryArray): Array[Byte] = {
    val n = math.max(a.length, b.length)
    val size = BinaryRow.elementSize(e)
    val header = 8 + Bytes.bitsetBytes(n)
    val out = new Array[Byte](header + Bytes.roundToWord(size * n))
    Bytes.putLong(out, 0, n.toLong)
    var j = 0
    while (j < n) {
      val has1 = j < a.length && !a.isNull(j)
      val has2 = j < b.length && !b.isNull(j)
      val at = header + size * j
      if (!has1 && !has2) {
        val w = 8 + (j >> 6) * 8
        Bytes.putLong(out, w, Bytes.getLong(out, w) | (1L << (j & 63)))
      } else e match {
        case LongType =>
          Bytes.putLong(out, at,
            if (!has1) b.getLong(j) else if (!has2) a.getLong(j) else op.longs(a.getLong(j), b.getLong(j)))
        case IntType =>
          Bytes.putInt(out, at,
            if (!has1) b.getInt(j) else if (!has2) a.getInt(j) else op.longs(a.getInt(j), b.getInt(j)).toInt)
        case DoubleType =>
          val v =
            if (!has1) b.getDouble(j) else if (!has2) a.getDouble(j) else op.doubles(a.getDouble(j), b.getDouble(j))
          Bytes.putLong(out, at, java.lang.Double.doubleToLongBits(v))
        case FloatType =>
          val v =
            if (!has1) b.getFloat(j) else if (!has2) a.getFloat(j) else op.doubles(a.getFloat(j), b.getFloat(j)).toFloat
          Bytes.putInt(out, at, java.lang.Float.floatToIntBits(v))
        case other => throw new SharedStateException(s"Arrays of ${other.sql} are not numeric.")
      }
      j += 1
    }
    out
  }
}
