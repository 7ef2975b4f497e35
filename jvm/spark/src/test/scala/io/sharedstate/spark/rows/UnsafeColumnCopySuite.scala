package io.sharedstate.spark.rows

import org.apache.spark.sql.catalyst.{CatalystTypeConverters, InternalRow}
import org.apache.spark.sql.catalyst.expressions.UnsafeProjection
import org.apache.spark.sql.catalyst.expressions.codegen.UnsafeRowWriter
import org.apache.spark.sql.catalyst.util.{ArrayBasedMapData, GenericArrayData}
import org.apache.spark.sql.types._
import org.apache.spark.unsafe.types.{CalendarInterval, UTF8String}
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/** UnsafeColumnCopy against Spark's own UnsafeProjection of the same values, for every kind of column. */
class UnsafeColumnCopySuite extends AnyFunSuite {
  private val struct = StructType(Seq(StructField("a", IntegerType), StructField("b", StringType)))
  private val types: Array[DataType] = Array(
    BooleanType,
    ByteType,
    ShortType,
    IntegerType,
    LongType,
    FloatType,
    DoubleType,
    DecimalType(10, 2),
    DecimalType(30, 5),
    DateType,
    TimestampType,
    StringType,
    BinaryType,
    ArrayType(StringType),
    MapType(StringType, IntegerType),
    struct,
    CalendarIntervalType,
    ArrayType(struct)
  )

  private def value(t: DataType, r: Random): Any = t match {
    case BooleanType => r.nextBoolean()
    case ByteType => r.nextInt().toByte
    case ShortType => r.nextInt().toShort
    case IntegerType | DateType => r.nextInt()
    case LongType | TimestampType => r.nextLong()
    case FloatType => r.nextFloat()
    case DoubleType => r.nextDouble()
    case d: DecimalType =>
      Decimal(BigDecimal(BigInt(d.precision * 3, r) % BigInt(10).pow(d.precision), d.scale), d.precision, d.scale)
    case StringType => UTF8String.fromString(r.alphanumeric.take(r.nextInt(30)).mkString)
    case BinaryType => Array.fill(r.nextInt(20))(r.nextInt().toByte)
    case ArrayType(e, _) => new GenericArrayData(Array.fill(r.nextInt(4))(maybe(e, r)))
    case MapType(k, v, _) =>
      val n = r.nextInt(4)
      ArrayBasedMapData(Array.tabulate[Any](n)(i => UTF8String.fromString(s"k$i")), Array.fill(n)(maybe(v, r)))
    case s: StructType => InternalRow.fromSeq(s.fields.map(f => maybe(f.dataType, r)).toSeq)
    case CalendarIntervalType => new CalendarInterval(r.nextInt(), r.nextInt(), r.nextLong())
  }

  private def maybe(t: DataType, r: Random): Any = if (r.nextInt(6) == 0) null else value(t, r)

  // External values (byte arrays as Seqs) so that equal contents compare equal.
  private def external(row: InternalRow, i: Int, t: DataType): Any = {
    val v = if (row.isNullAt(i)) null else CatalystTypeConverters.convertToScala(row.get(i, t), t)
    v match { case b: Array[Byte] => b.toSeq; case other => other }
  }

  test("copies every kind of column, nulls included, at an offset between other columns") {
    val source = UnsafeProjection.create(types)
    val whole = UnsafeProjection.create(LongType +: types :+ StringType)
    val copy = new UnsafeColumnCopy(types)
    val writer = new UnsafeRowWriter(types.length + 2, 16)
    for (seed <- 1 to 40) {
      val r = new Random(seed)
      val cells = types.map(maybe(_, r))
      val row = source(InternalRow.fromSeq(cells.toSeq)).copy()
      writer.reset()
      writer.zeroOutNullBytes()
      writer.write(0, seed.toLong)
      copy.copy(row, writer, 1)
      writer.write(types.length + 1, UTF8String.fromString(s"after $seed"))
      val actual = writer.getRow
      val expected = whole(InternalRow.fromSeq(seed.toLong +: cells.toSeq :+ UTF8String.fromString(s"after $seed")))
      (LongType +: types :+ StringType).zipWithIndex.foreach { case (t, i) =>
        assert(external(actual, i, t) == external(expected, i, t), s"seed $seed, column $i ($t)")
      }
    }
  }

  test("nulls writes null into every copied column and nothing else") {
    val copy = new UnsafeColumnCopy(types)
    val writer = new UnsafeRowWriter(types.length + 1, 16)
    writer.reset()
    writer.zeroOutNullBytes()
    writer.write(0, 7L)
    copy.nulls(writer, 1)
    val row = writer.getRow
    assert(row.getLong(0) == 7L)
    assert((1 to types.length).forall(row.isNullAt))
  }
}
