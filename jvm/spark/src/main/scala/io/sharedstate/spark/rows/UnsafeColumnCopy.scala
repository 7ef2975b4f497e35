package io.sharedstate.spark.rows

import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.types.{DataType, DecimalType}
import org.apache.spark.unsafe.Platform

/**
 * Copies columns of on-heap UnsafeRows of a given schema into an UnsafeRowWriter without decoding
 * them: a fixed-length column is its 8-byte slot, any other column is its bytes in the row's
 * variable-length region (strings, binaries, intervals, variants, and nested arrays, maps and
 * structs, whose offsets are relative to their own start). Only a decimal too wide for a long goes
 * through Decimal, so the writer keeps the 16 bytes such a column reserves.
 */
private[sharedstate] final class UnsafeColumnCopy(types: Array[DataType]) {
  import UnsafeColumnCopy._
  private val kinds: Array[Int] = types.map {
    case d: DecimalType if d.precision > org.apache.spark.sql.types.Decimal.MAX_LONG_DIGITS => WideDecimal
    case t if UnsafeRow.isFixedLength(t) => Fixed
    case _ => Variable
  }
  private val decimals: Array[DecimalType] = types.map { case d: DecimalType => d; case _ => null }

  def width: Int = types.length

  /** Columns [0, width) of `from` into the writer's ordinals [at, at + width). */
  def copy(from: UnsafeRow, to: UnsafeRowWriter, at: Int): Unit = {
    var i = 0
    while (i < kinds.length) {
      val o = at + i
      if (from.isNullAt(i)) to.setNullAt(o)
      else kinds(i) match {
        case Fixed => to.write(o, from.getLong(i))
        case Variable =>
          val offsetAndSize = from.getLong(i)
          val start = from.getBaseOffset + (offsetAndSize >>> 32) - Platform.BYTE_ARRAY_OFFSET
          to.write(o, bytesOf(from), start.toInt, offsetAndSize.toInt)
        case _ =>
          val d = decimals(i)
          to.write(o, from.getDecimal(i, d.precision, d.scale), d.precision, d.scale)
      }
      i += 1
    }
  }

  /** Nulls into ordinals [at, at + width). */
  def nulls(to: UnsafeRowWriter, at: Int): Unit = {
    var i = 0
    while (i < kinds.length) { to.setNullAt(at + i); i += 1 }
  }
}

private[sharedstate] object UnsafeColumnCopy {
  private val Fixed = 0
  private val Variable = 1
  private val WideDecimal = 2

  private def bytesOf(row: UnsafeRow): Array[Byte] = row.getBaseObject match {
    case bytes: Array[Byte] => bytes
    case other => throw new IllegalArgumentException(
        s"UnsafeColumnCopy reads on-heap rows (byte arrays); got a row over ${Option(other).map(_.getClass.getName).orNull}")
  }
}
