package io.sharedstate.core.row

import io.sharedstate.core.SharedStateException
import java.nio.charset.StandardCharsets.UTF_8

/**
 * Reads fields of a binary row in Spark's UnsafeRow layout without converting the row to objects:
 * a null bitset (one 8-byte word per 64 fields), one 8-byte slot per field (fixed-width values
 * inline; variable-width as offset << 32 | size, the offset relative to the row start), then the
 * variable-length region. Arrays use UnsafeArrayData's layout: numElements as 8 bytes, a null bitset,
 * the elements (fixed width, or offset << 32 | size relative to the array start), then their data.
 *
 * `base` is where the row starts inside `b`, so rows packed in a larger array are read in place.
 */
final class BinaryRow(val numFields: Int) {
  private val bitset = Bytes.bitsetBytes(numFields)

  def isNull(b: Array[Byte], base: Int, i: Int): Boolean =
    (Bytes.getLong(b, base + (i >> 6) * 8) & (1L << (i & 63))) != 0

  def slot(base: Int, i: Int): Int = base + bitset + 8 * i

  def getLong(b: Array[Byte], base: Int, i: Int): Long = Bytes.getLong(b, slot(base, i))
  def getInt(b: Array[Byte], base: Int, i: Int): Int = Bytes.getInt(b, slot(base, i))
  def getDouble(b: Array[Byte], base: Int, i: Int): Double = java.lang.Double.longBitsToDouble(getLong(b, base, i))
  def getFloat(b: Array[Byte], base: Int, i: Int): Float = java.lang.Float.intBitsToFloat(getInt(b, base, i))
  def getBoolean(b: Array[Byte], base: Int, i: Int): Boolean = b(slot(base, i)) != 0

  /** Absolute offset of the variable-length data of field `i`. */
  def varOffset(b: Array[Byte], base: Int, i: Int): Int = base + (getLong(b, base, i) >>> 32).toInt
  def varSize(b: Array[Byte], base: Int, i: Int): Int = getLong(b, base, i).toInt

  def getString(b: Array[Byte], base: Int, i: Int): String =
    new String(b, varOffset(b, base, i), varSize(b, base, i), UTF_8)

  /** The array in field `i`, read in place. */
  def getArray(b: Array[Byte], base: Int, i: Int): BinaryArray = new BinaryArray(b, varOffset(b, base, i))
}

/** An UnsafeArrayData-layout array inside `b` at `base`. */
final class BinaryArray(val b: Array[Byte], val base: Int) {
  val length: Int = Bytes.getLong(b, base).toInt
  private val data = base + 8 + Bytes.bitsetBytes(length)

  def isNull(i: Int): Boolean = (Bytes.getLong(b, base + 8 + (i >> 6) * 8) & (1L << (i & 63))) != 0
  def getLong(i: Int): Long = Bytes.getLong(b, data + 8 * i)
  def getDouble(i: Int): Double = java.lang.Double.longBitsToDouble(getLong(i))
  def getInt(i: Int): Int = Bytes.getInt(b, data + 4 * i)
  def getFloat(i: Int): Float = java.lang.Float.intBitsToFloat(getInt(i))
  def getBoolean(i: Int): Boolean = b(data + i) != 0
  def getString(i: Int): String = {
    val os = Bytes.getLong(b, data + 8 * i)
    new String(b, base + (os >>> 32).toInt, os.toInt, UTF_8)
  }
}

object BinaryRow {

  /** The bytes of an element of `t` inside an array (UnsafeArrayData element size). */
  def elementSize(t: FieldType): Int = t match {
    case FieldType.LongType | FieldType.DoubleType | FieldType.TimestampType => 8
    case FieldType.IntType | FieldType.FloatType => 4
    case FieldType.BooleanType => 1
    case FieldType.StringType | FieldType.ArrayType(_) => 8
    case FieldType.Opaque(sql) =>
      throw new SharedStateException(s"Arrays of $sql are not supported by the engine's row codec.")
  }

  /** The row as JVM objects (Long, Integer, Double, Float, Boolean, String, Object[] for arrays), for tests and embedded use. */
  def decode(t: ValueType, bytes: Array[Byte]): Array[AnyRef] = {
    val r = new BinaryRow(t.size)
    Array.tabulate[AnyRef](t.size) { i =>
      if (r.isNull(bytes, 0, i)) null
      else t(i) match {
        case FieldType.LongType | FieldType.TimestampType => java.lang.Long.valueOf(r.getLong(bytes, 0, i))
        case FieldType.IntType => java.lang.Integer.valueOf(r.getInt(bytes, 0, i))
        case FieldType.DoubleType => java.lang.Double.valueOf(r.getDouble(bytes, 0, i))
        case FieldType.FloatType => java.lang.Float.valueOf(r.getFloat(bytes, 0, i))
        case FieldType.BooleanType => java.lang.Boolean.valueOf(r.getBoolean(bytes, 0, i))
        case FieldType.StringType => r.getString(bytes, 0, i)
        case FieldType.ArrayType(e) => decodeArray(e, r.getArray(bytes, 0, i))
        case FieldType.Opaque(sql) =>
          throw new SharedStateException(
            s"Column '${t.fields(i).name}' has type $sql, which the engine's row codec cannot decode.")
      }
    }
  }

  private def decodeArray(e: FieldType, a: BinaryArray): Array[AnyRef] = Array.tabulate[AnyRef](a.length) { j =>
    if (a.isNull(j)) null
    else e match {
      case FieldType.LongType | FieldType.TimestampType => java.lang.Long.valueOf(a.getLong(j))
      case FieldType.IntType => java.lang.Integer.valueOf(a.getInt(j))
      case FieldType.DoubleType => java.lang.Double.valueOf(a.getDouble(j))
      case FieldType.FloatType => java.lang.Float.valueOf(a.getFloat(j))
      case FieldType.BooleanType => java.lang.Boolean.valueOf(a.getBoolean(j))
      case FieldType.StringType => a.getString(j)
      case other =>
        throw new SharedStateException(s"Arrays of ${other.sql} are not supported by the engine's row codec.")
    }
  }

  /** Encodes JVM objects (as [[decode]] returns them; any java.lang.Number for numbers) into a row. */
  def encode(t: ValueType, values: Array[AnyRef]): Array[Byte] = {
    if (values.length != t.size) {
      throw new SharedStateException(s"A row of <${t.ddl}> needs ${t.size} value(s), got ${values.length}.")
    }
    val w = new BinaryRowWriter(t.size)
    var i = 0
    while (i < t.size) { w.setObject(i, t(i), values(i), t.fields(i).name); i += 1 }
    w.toBytes
  }
}
