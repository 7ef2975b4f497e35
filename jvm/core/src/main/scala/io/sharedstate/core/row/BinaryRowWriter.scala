package io.sharedstate.core.row

import io.sharedstate.core.SharedStateException
import java.nio.charset.StandardCharsets.UTF_8
import java.util.Arrays

/**
 * Writes one row in Spark's UnsafeRow layout (see [[BinaryRow]]), byte for byte as Spark's
 * UnsafeRowWriter does when fields are set in ordinal order: ints and floats zero their whole slot,
 * NaN is normalised, variable-length data is word aligned with zero padding. Not reusable.
 */
final class BinaryRowWriter(numFields: Int) {
  private val bitset = Bytes.bitsetBytes(numFields)
  private var buf = new Array[Byte](math.max(16, bitset + 8 * numFields + 32))
  private var cursor = bitset + 8 * numFields

  private def slot(i: Int): Int = bitset + 8 * i

  def setNull(i: Int): Unit = {
    val w = (i >> 6) * 8
    Bytes.putLong(buf, w, Bytes.getLong(buf, w) | (1L << (i & 63)))
    Bytes.putLong(buf, slot(i), 0L)
  }

  def setLong(i: Int, v: Long): Unit = Bytes.putLong(buf, slot(i), v)
  def setInt(i: Int, v: Int): Unit = { Bytes.putLong(buf, slot(i), 0L); Bytes.putInt(buf, slot(i), v) }
  def setDouble(i: Int, v: Double): Unit = setLong(i, java.lang.Double.doubleToLongBits(v)) // NaN canonical
  def setFloat(i: Int, v: Float): Unit = setInt(i, java.lang.Float.floatToIntBits(v))
  def setBoolean(i: Int, v: Boolean): Unit = { Bytes.putLong(buf, slot(i), 0L); buf(slot(i)) = if (v) 1 else 0 }

  def setString(i: Int, s: String): Unit = setVariable(i, s.getBytes(UTF_8))

  /** Copies `bytes` into the variable region and points field `i` at them. */
  def setVariable(i: Int, bytes: Array[Byte]): Unit = {
    val at = reserve(Bytes.roundToWord(bytes.length))
    System.arraycopy(bytes, 0, buf, at, bytes.length)
    Bytes.putLong(buf, slot(i), (at.toLong << 32) | bytes.length)
  }

  /** Writes an array of `element` values (boxed, nulls allowed) as UnsafeArrayData into field `i`. */
  def setArray(i: Int, element: FieldType, values: Array[_ <: AnyRef], column: String): Unit =
    setVariable(i, BinaryRowWriter.array(element, values, column))

  def setObject(i: Int, t: FieldType, v: AnyRef, column: String): Unit = {
    if (v == null) setNull(i)
    else t match {
      case FieldType.LongType | FieldType.TimestampType => setLong(i, BinaryRowWriter.number(v, column, t).longValue)
      case FieldType.IntType => setInt(i, BinaryRowWriter.int(v, column))
      case FieldType.DoubleType => setDouble(i, BinaryRowWriter.number(v, column, t).doubleValue)
      case FieldType.FloatType => setFloat(i, BinaryRowWriter.number(v, column, t).floatValue)
      case FieldType.BooleanType => v match {
          case b: java.lang.Boolean => setBoolean(i, b)
          case other => throw BinaryRowWriter.mismatch(column, t, other)
        }
      case FieldType.StringType => v match {
          case s: String => setString(i, s)
          case other => throw BinaryRowWriter.mismatch(column, t, other)
        }
      case FieldType.ArrayType(e) => setArray(i, e, BinaryRowWriter.objects(v, column, t), column)
      case FieldType.Opaque(sql) =>
        throw new SharedStateException(s"Column '$column' has type $sql, which the engine's row codec cannot encode.")
    }
  }

  def toBytes: Array[Byte] = Arrays.copyOf(buf, cursor)

  private def reserve(n: Int): Int = {
    if (cursor + n > buf.length) buf = Arrays.copyOf(buf, math.max(buf.length * 2, cursor + n))
    val at = cursor
    cursor += n
    at
  }
}

object BinaryRowWriter {

  /** An UnsafeArrayData image of `values`. */
  def array(element: FieldType, values: Array[_ <: AnyRef], column: String): Array[Byte] = {
    val n = values.length
    val size = BinaryRow.elementSize(element)
    val header = 8 + Bytes.bitsetBytes(n)
    val fixed = Bytes.roundToWord(size * n)
    val strings = element match {
      case FieldType.StringType => values.map(v => if (v == null) null else string(v, column))
      case _ => null
    }
    val varBytes =
      if (strings == null) 0 else strings.iterator.map(s => if (s == null) 0 else Bytes.roundToWord(s.length)).sum
    val out = new Array[Byte](header + fixed + varBytes)
    Bytes.putLong(out, 0, n.toLong)
    var cursor = header + fixed
    var j = 0
    while (j < n) {
      val at = header + size * j
      val v = values(j)
      if (v == null) {
        val w = 8 + (j >> 6) * 8
        Bytes.putLong(out, w, Bytes.getLong(out, w) | (1L << (j & 63)))
      } else element match {
        case FieldType.LongType | FieldType.TimestampType =>
          Bytes.putLong(out, at, number(v, column, element).longValue)
        case FieldType.DoubleType =>
          Bytes.putLong(out, at, java.lang.Double.doubleToLongBits(number(v, column, element).doubleValue))
        case FieldType.IntType => Bytes.putInt(out, at, int(v, column))
        case FieldType.FloatType =>
          Bytes.putInt(out, at, java.lang.Float.floatToIntBits(number(v, column, element).floatValue))
        case FieldType.BooleanType => v match {
            case b: java.lang.Boolean => out(at) = if (b) 1 else 0
            case other => throw mismatch(column, element, other)
          }
        case FieldType.StringType =>
          val s = strings(j)
          System.arraycopy(s, 0, out, cursor, s.length)
          Bytes.putLong(out, at, (cursor.toLong << 32) | s.length)
          cursor += Bytes.roundToWord(s.length)
        case other => throw new SharedStateException(
            s"Column '$column': arrays of ${other.sql} are not supported by the engine's row codec.")
      }
      j += 1
    }
    out
  }

  private def string(v: AnyRef, column: String): Array[Byte] = v match {
    case s: String => s.getBytes(UTF_8)
    case other => throw mismatch(column, FieldType.StringType, other)
  }

  private def number(v: AnyRef, column: String, t: FieldType): Number = v match {
    case n: Number => n
    case other => throw mismatch(column, t, other)
  }

  private def int(v: AnyRef, column: String): Int = {
    val n = number(v, column, FieldType.IntType)
    val l = n.longValue
    if ((n.isInstanceOf[java.lang.Double] || n.isInstanceOf[java.lang.Float]) && n.doubleValue != l.toDouble || l != l
        .toInt) {
      throw new SharedStateException(s"Column '$column' is INT; the value $n does not fit.")
    }
    l.toInt
  }

  private def objects(v: AnyRef, column: String, t: FieldType): Array[_ <: AnyRef] = v match {
    case a: Array[AnyRef] => a
    case l: java.util.List[_] => l.toArray
    case s: Iterable[_] => s.map(_.asInstanceOf[AnyRef]).toArray
    case a: Array[Long] => a.map(java.lang.Long.valueOf)
    case a: Array[Int] => a.map(java.lang.Integer.valueOf)
    case a: Array[Double] => a.map(java.lang.Double.valueOf)
    case a: Array[Float] => a.map(java.lang.Float.valueOf)
    case other => throw mismatch(column, t, other)
  }

  private[row] def mismatch(column: String, t: FieldType, v: AnyRef): SharedStateException =
    new SharedStateException(s"Column '$column' is ${t.sql}; got ${v.getClass.getSimpleName} '$v'.")
}
