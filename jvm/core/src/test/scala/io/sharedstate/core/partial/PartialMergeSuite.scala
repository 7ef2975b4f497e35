package io.sharedstate.core.partial

import io.sharedstate.core.SharedStateException
import io.sharedstate.core.row.{BinaryRow, ValueType}
import io.sharedstate.core.StateSpec
import org.scalatest.funsuite.AnyFunSuite

/** A user merge: keeps the longer STRING (a non-numeric merge the built-ins cannot do). */
final class LongerStringMerge(t: ValueType) extends PartialMerge {
  val name = "longer"
  def merge(a: Array[Byte], b: Array[Byte]): Array[Byte] = {
    val sa = BinaryRow.decode(t, a)(0).asInstanceOf[String]
    val sb = BinaryRow.decode(t, b)(0).asInstanceOf[String]
    if (sb.length > sa.length) b else a
  }
}

class PartialMergeSuite extends AnyFunSuite {
  private def enc(t: ValueType, vs: AnyRef*) = BinaryRow.encode(t, vs.toArray)
  private def dec(t: ValueType, b: Array[Byte]) = BinaryRow.decode(t, b).toSeq
  private def merged(ddl: String, merge: String, values: Seq[Seq[AnyRef]]): Seq[AnyRef] = {
    val t = ValueType.parse(ddl)
    val view = new PartialView("s", merge, t)
    val stored = PartialValues.encode(values.indices.toArray, values.map(v => enc(t, v: _*)).toArray)
    dec(t, view.merged(stored))
  }
  private def d(x: Double) = java.lang.Double.valueOf(x)
  private def l(x: Long) = java.lang.Long.valueOf(x)

  test("sum adds numbers and numeric arrays element-wise (vectors of different lengths)") {
    val out = merged("n BIGINT, w ARRAY<DOUBLE>", "sum",
      Seq(Seq(l(1), Array[AnyRef](d(1), d(2))), Seq(l(2), Array[AnyRef](d(10), d(20), d(30))), Seq(l(4), null)))
    assert(out.head == l(7))
    assert(out(1).asInstanceOf[Array[AnyRef]].toSeq == Seq(d(11), d(22), d(30)))
  }

  test("min and max per column, also STRING") {
    assert(merged("n BIGINT, s STRING", "min", Seq(Seq(l(5), "b"), Seq(l(3), "c"), Seq(l(9), "a"))) == Seq(l(3), "a"))
    assert(merged("n BIGINT, s STRING", "MAX", Seq(Seq(l(5), "b"), Seq(l(3), "c"), Seq(l(9), "a"))) == Seq(l(9), "c"))
  }

  test("union keeps each array as a set in instance order") {
    val out = merged("tags ARRAY<STRING>", "union",
      Seq(Seq(Array[AnyRef]("a", "b")), Seq(Array[AnyRef]("b", "c")), Seq(null)))
    assert(out.head.asInstanceOf[Array[AnyRef]].toSeq == Seq("a", "b", "c"))
  }

  test("a user merge class") {
    val name = s"class:${classOf[LongerStringMerge].getName}"
    assert(merged("s STRING", name, Seq(Seq("ab"), Seq("abcd"), Seq("abc"))) == Seq("abcd"))
  }

  test("a merge that does not fit the value type names the State, the merge and the type") {
    val e = intercept[SharedStateException](StateSpec("model", "k STRING", "s STRING", 1, "replace", partial = "sum"))
    assert(
      e.getMessage.contains("State 'model'") && e.getMessage.contains("'sum'") && e.getMessage.contains("s STRING"))
    val u = intercept[SharedStateException](StateSpec("m", "k STRING", "n BIGINT", 1, "replace", partial = "union"))
    assert(u.getMessage.contains("'union'") && u.getMessage.contains("n BIGINT") && u.getMessage.contains("ARRAY"))
    val c = intercept[SharedStateException](
      StateSpec("m", "k STRING", "n BIGINT", 1, "replace", partial = "class:java.lang.String"))
    assert(c.getMessage.contains("does not implement") && c.getMessage.contains("PartialMerge"))
  }

  test("unknown merges and instance kinds list what is allowed") {
    val e = intercept[SharedStateException](StateSpec("m", "k STRING", "n BIGINT", 1, "sum", partial = "avg"))
    assert(e.getMessage.contains("unknown partial merge 'avg'") && e.getMessage.contains("sum, min, max, union"))
    val x = intercept[SharedStateException](StateSpec("m", "k STRING", "n BIGINT", 1, "sum", partial = "expr:a + b"))
    assert(x.getMessage.contains("Spark plugin"))
    val i = intercept[SharedStateException](
      StateSpec("m", "k STRING", "n BIGINT", 1, "sum", partial = "sum", instances = "executor"))
    assert(i.getMessage.contains("instances") && i.getMessage.contains("task, query"))
  }

  test("instance sets: encode, replace and insert in order, and plain values refused") {
    val a = PartialValues.withValue(null, 5, Array[Byte](1))
    val b = PartialValues.withValue(a, 2, Array[Byte](2, 2))
    val c = PartialValues.withValue(b, 5, Array[Byte](3, 3, 3))
    assert(PartialValues.instances(c).toSeq == Seq(2, 5))
    assert(PartialValues.values(c).map(_.toSeq).toSeq == Seq(Seq[Byte](2, 2), Seq[Byte](3, 3, 3)))
    assert(PartialValues.valueOf(c, 7) == null)
    val e = intercept[SharedStateException](PartialValues.values(new Array[Byte](16)))
    assert(e.getMessage.contains("not a partial State's instance set"))
  }
}
