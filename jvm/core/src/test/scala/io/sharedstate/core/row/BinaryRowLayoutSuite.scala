package io.sharedstate.core.row

import io.sharedstate.core.SharedStateException
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

/**
 * Byte layouts written out by hand from Spark's UnsafeRow / UnsafeRowWriter / UnsafeArrayWriter
 * (Spark 4.2.0): null bitset words, 8-byte slots, ints zeroing their slot, (offset << 32 | size)
 * pointers relative to the row (or array) start, word-aligned zero-padded variable data, and
 * UnsafeArrayData's numElements / null bits / elements. The codec must produce exactly these bytes.
 */
class BinaryRowLayoutSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  private def hex(s: String): Array[Byte] = s.split("\\s+").filter(_.nonEmpty).map(Integer.parseInt(_, 16).toByte)
  private def show(b: Array[Byte]) = b.map(x => f"$x%02x").grouped(8).map(_.mkString(" ")).mkString(" | ")
  private def assertBytes(got: Array[Byte], want: String): Unit =
    assert(got.sameElements(hex(want)), s"\n got: ${show(got)}\nwant: ${show(hex(want))}")

  test("BIGINT, INT, STRING, DOUBLE: inline slots, int zero-extended, string pointer and padding") {
    val t = ValueType.parse("a BIGINT, b INT, c STRING, d DOUBLE")
    val bytes = BinaryRow.encode(t, Array(Long.box(1L), Int.box(-2), "hi", Double.box(1.5)))
    assertBytes(
      bytes,
      """00 00 00 00 00 00 00 00
         01 00 00 00 00 00 00 00
         fe ff ff ff 00 00 00 00
         02 00 00 00 28 00 00 00
         00 00 00 00 00 00 f8 3f
         68 69 00 00 00 00 00 00"""
    )
  }

  test("a null column sets its bit and zeroes its slot") {
    val t = ValueType.parse("a BIGINT, b STRING")
    assertBytes(
      BinaryRow.encode(t, Array(null, "x")),
      """01 00 00 00 00 00 00 00
         00 00 00 00 00 00 00 00
         01 00 00 00 18 00 00 00
         78 00 00 00 00 00 00 00"""
    )
  }

  test("ARRAY<DOUBLE>: numElements, null bits, elements") {
    val t = ValueType.parse("w ARRAY<DOUBLE>")
    assertBytes(
      BinaryRow.encode(t, Array(Array[AnyRef](Double.box(1.0), Double.box(2.0)))),
      """00 00 00 00 00 00 00 00
         20 00 00 00 10 00 00 00
         02 00 00 00 00 00 00 00
         00 00 00 00 00 00 00 00
         00 00 00 00 00 00 f0 3f
         00 00 00 00 00 00 00 40"""
    )
  }

  test("ARRAY<INT> with a null element: 4-byte elements, null bit, word-rounded fixed part") {
    val t = ValueType.parse("xs ARRAY<INT>")
    assertBytes(
      BinaryRow.encode(t, Array(Array[AnyRef](Int.box(1), null, Int.box(3)))),
      """00 00 00 00 00 00 00 00
         20 00 00 00 10 00 00 00
         03 00 00 00 00 00 00 00
         02 00 00 00 00 00 00 00
         01 00 00 00 00 00 00 00
         03 00 00 00 00 00 00 00"""
    )
  }

  test("ARRAY<STRING>: element pointers relative to the array start") {
    val t = ValueType.parse("n ARRAY<STRING>")
    assertBytes(
      BinaryRow.encode(t, Array(Array[AnyRef]("a", "bcd"))),
      """00 00 00 00 00 00 00 00
         30 00 00 00 10 00 00 00
         02 00 00 00 00 00 00 00
         00 00 00 00 00 00 00 00
         01 00 00 00 20 00 00 00
         03 00 00 00 28 00 00 00
         61 00 00 00 00 00 00 00
         62 63 64 00 00 00 00 00"""
    )
  }

  test("65 columns take two bitset words; FLOAT and BOOLEAN zero the rest of their slot") {
    val t = ValueType((0 until 65).map(i => Field(s"c$i", if (i == 0) FieldType.FloatType else FieldType.BooleanType)))
    val values: Array[AnyRef] =
      Array.tabulate(65)(i => if (i == 0) Float.box(1.0f) else if (i == 64) null else Boolean.box(i % 2 == 1))
    val bytes = BinaryRow.encode(t, values)
    assert(bytes.length == 16 + 65 * 8)
    assert(bytes.slice(0, 16).sameElements(hex("00 00 00 00 00 00 00 00 01 00 00 00 00 00 00 00")))
    assert(bytes.slice(16, 24).sameElements(hex("00 00 80 3f 00 00 00 00")))
    assert(bytes.slice(24, 32).sameElements(hex("01 00 00 00 00 00 00 00")))
    assert(bytes.slice(32, 40).sameElements(hex("00 00 00 00 00 00 00 00")))
    assert(BinaryRow.decode(t, bytes).toSeq == values.toSeq)
  }

  test("NaN is written in its canonical form, as Spark normalises it") {
    val t = ValueType.parse("d DOUBLE")
    val odd = java.lang.Double.longBitsToDouble(0x7ff8000000000123L)
    val bytes = BinaryRow.encode(t, Array(Double.box(odd)))
    assert(new BinaryRow(1).getLong(bytes, 0, 0) == 0x7ff8000000000000L)
  }

  test("encode then decode gives the values back, for random rows of every supported type") {
    val t = ValueType.parse("a BIGINT, b INT, c DOUBLE, d FLOAT, e STRING, f BOOLEAN, g TIMESTAMP, " +
      "h ARRAY<BIGINT>, i ARRAY<STRING>, j ARRAY<DOUBLE>, k ARRAY<INT>")
    def opt[T](g: Gen[T]): Gen[AnyRef] = Gen.oneOf(Gen.const(null), g.map(_.asInstanceOf[AnyRef]))
    val row = for {
      a <- opt(Gen.long.map(Long.box)); b <- opt(Gen.choose(Int.MinValue, Int.MaxValue).map(Int.box))
      c <- opt(Gen.double.map(Double.box)); d <- opt(Gen.choose(-1e6f, 1e6f).map(Float.box))
      e <- opt(Gen.asciiStr); f <- opt(Gen.oneOf(true, false).map(Boolean.box)); g <- opt(Gen.long.map(Long.box))
      h <- opt(Gen.listOf(opt(Gen.long.map(Long.box))).map(_.toArray))
      i <- opt(Gen.listOf(opt(Gen.alphaNumStr)).map(_.toArray))
      j <- opt(Gen.listOf(Gen.double.map(Double.box)).map(_.toArray[AnyRef]))
      k <- opt(Gen.listOf(Gen.choose(-5, 5).map(Int.box)).map(_.toArray[AnyRef]))
    } yield Array[AnyRef](a, b, c, d, e, f, g, h, i, j, k)
    def norm(v: AnyRef): Any = v match {
      case arr: Array[_] => arr.toSeq.map(x => norm(x.asInstanceOf[AnyRef]))
      case d: java.lang.Double if d.isNaN => "NaN"
      case other => other
    }
    forAll(row) { values =>
      val bytes = BinaryRow.encode(t, values)
      assert(bytes.length % 8 == 0, "rows are word aligned")
      assert(BinaryRow.decode(t, bytes).toSeq.map(norm) == values.toSeq.map(norm))
    }
  }

  test("values of the wrong type fail naming the column and its type") {
    val t = ValueType.parse("clicks BIGINT")
    val e = intercept[SharedStateException](BinaryRow.encode(t, Array("ten")))
    assert(e.getMessage.contains("'clicks'") && e.getMessage.contains("BIGINT"))
    val e2 = intercept[SharedStateException](BinaryRow.encode(ValueType.parse("n INT"), Array(Long.box(1L << 40))))
    assert(e2.getMessage.contains("does not fit"))
  }

  test("the DDL subset: backticks, NOT NULL, nested arrays and opaque types") {
    val t = ValueType.parse("`my col` BIGINT NOT NULL, w array<double>, m MAP<STRING, INT>, d DECIMAL(10, 2)")
    assert(t.fields.map(_.name) == Seq("my col", "w", "m", "d"))
    assert(t(0) == FieldType.LongType && t(1) == FieldType.ArrayType(FieldType.DoubleType))
    assert(t(2).isInstanceOf[FieldType.Opaque] && t(3).isInstanceOf[FieldType.Opaque])
    assert(intercept[SharedStateException](ValueType.parse("justaname")).getMessage.contains("has no type"))
  }
}
