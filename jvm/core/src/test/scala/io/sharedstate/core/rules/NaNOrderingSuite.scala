package io.sharedstate.core.rules

import io.sharedstate.core.{FetchAnswer, Key, State, StateSpec, UpdateBatch}
import io.sharedstate.core.fetch.FetchRequest
import io.sharedstate.core.row.{BinaryRow, ValueType}
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/**
 * `min`/`max` (update rules and range aggregates) order floating-point values as Spark SQL does: NaN
 * above every other value. The oracle sorts with `java.lang.Double.compare`, whose total order puts
 * NaN above +Infinity (as Spark SQL does) and -0.0 below 0.0 (the engine's documented choice; Spark
 * SQL counts the two zeros equal).
 */
class NaNOrderingSuite extends AnyFunSuite {
  private val t = ValueType.parse("d DOUBLE, f FLOAT, a ARRAY<DOUBLE>, fa ARRAY<FLOAT>")
  private val ord: Ordering[Double] = (x: Double, y: Double) => java.lang.Double.compare(x, y)
  private val specials =
    Seq(Double.NaN, Double.PositiveInfinity, Double.NegativeInfinity, 0.0, -0.0, Double.MaxValue, -Double.MaxValue)

  private def value(r: Random): Double = if (r.nextInt(3) == 0) specials(r.nextInt(specials.size)) else r.nextGaussian()

  /** A random row: each column null one time in five, arrays of 0-3 elements with null elements. */
  private def randomRow(r: Random): Seq[Any] = {
    def maybe[A](a: => A): Any = if (r.nextInt(5) == 0) null else a
    def arr(f: Double => AnyRef): Any = maybe(Seq.fill(r.nextInt(4))(if (r.nextInt(6) == 0) null else f(value(r))))
    Seq(maybe(value(r)), maybe(value(r).toFloat), arr(Double.box), arr(d => Float.box(d.toFloat)))
  }

  private def encode(v: Seq[Any]): Array[Byte] = BinaryRow.encode(
    t,
    v.map {
      case s: Seq[_] => s.toArray[Any].asInstanceOf[Array[AnyRef]]
      case d: Double => Double.box(d)
      case f: Float => Float.box(f)
      case null => null
    }.toArray
  )

  private def decode(b: Array[Byte]): Seq[Any] =
    BinaryRow.decode(t, b).toSeq.map { case a: Array[AnyRef] => a.toSeq; case o => o }

  private def asDouble(x: Any): Double = x match {
    case d: Double => d
    case f: Float => f.toDouble
    case d: java.lang.Double => d.doubleValue
    case f: java.lang.Float => f.doubleValue
  }

  /** The oracle: per column (and per array element) the extreme of the non-null values, or null. */
  private def oracle(rows: Seq[Seq[Any]], min: Boolean): Seq[Any] = {
    def extreme(xs: Seq[Any]): Any = {
      val present = xs.filter(_ != null).map(asDouble)
      if (present.isEmpty) null else if (min) present.min(ord) else present.max(ord)
    }
    (0 until t.size).map { c =>
      val col = rows.map(_(c))
      if (c < 2) extreme(col)
      else {
        val arrays = col.collect { case s: Seq[_] => s }
        if (arrays.isEmpty) null
        else (0 until arrays.map(_.size).max).map(j => extreme(arrays.collect { case s if j < s.size => s(j) }))
      }
    }
  }

  /** Equal in the total order: NaN equals NaN, -0.0 differs from 0.0. */
  private def same(got: Seq[Any], want: Seq[Any]): Boolean = got.size == want.size && got.zip(want).forall {
    case (null, null) => true
    case (g: Seq[_], w: Seq[_]) => same(g, w)
    case (null, _) | (_, null) => false
    case (g, w) => java.lang.Double.compare(asDouble(g), asDouble(w)) == 0
  }

  test("min and max update rules order NaN above everything, for DOUBLE and FLOAT, scalars and array elements") {
    val r = new Random(7)
    for (round <- 0 until 500; name <- Seq("min", "max")) {
      val rows = Seq.fill(1 + r.nextInt(6))(randomRow(r))
      val rule = UpdateRule.resolve(name, t)
      val got = decode(rows.map(encode).foldLeft(null: Array[Byte])((p, in) => rule(p, in)))
      val want = oracle(rows, name == "min")
      assert(same(got, want), s"round $round, $name of $rows: got $got, want $want")
    }
  }

  test("one NaN does not poison a key's minimum; every value NaN gives NaN; max is NaN once one value is") {
    val one = ValueType.parse("d DOUBLE")
    def fold(name: String, xs: Double*): Double = {
      val rule = UpdateRule.resolve(name, one)
      BinaryRow.decode(one,
        xs.map(x => BinaryRow.encode(one, Array(Double.box(x))))
          .foldLeft(null: Array[Byte])((p, in) => rule(p, in)))(0).asInstanceOf[Double]
    }
    assert(fold("min", 3.0, Double.NaN, 1.0) == 1.0)
    assert(fold("min", Double.NaN, Double.PositiveInfinity) == Double.PositiveInfinity)
    assert(fold("min", Double.NaN, Double.NaN).isNaN)
    assert(fold("max", 3.0, Double.NaN, Double.PositiveInfinity).isNaN)
    assert(fold("max", Double.NaN, 1.0).isNaN)
    assert(java.lang.Double.compare(fold("min", 0.0, -0.0), -0.0) == 0, "-0.0 is below 0.0")
    assert(java.lang.Double.compare(fold("max", -0.0, 0.0), 0.0) == 0)
  }

  test("a min State updated out of order, and min/max range aggregates, agree with the oracle") {
    val r = new Random(11)
    for (round <- 0 until 40) {
      val n = 1 + r.nextInt(12)
      val updates = r.shuffle((1 to n).map(i => (i * 10L, randomRow(r))))
      val byTime = updates.sortBy(_._1)
      val minState = new State(StateSpec(s"min$round", "k STRING", t.ddl, 2, "min"))
      val replace = new State(StateSpec(s"rep$round", "k STRING", t.ddl, 2, "replace"))
      for (s <- Seq(minState, replace)) {
        s.registerWriter("w")
        updates.grouped(3).zipWithIndex.foreach { case (group, epoch) =>
          val b = new UpdateBatch
          group.foreach { case (time, v) => b.add("k".getBytes, time, encode(v)) }
          s.stage("w", epoch.toLong, 0, b)
          s.commitEpoch("w", epoch.toLong, 5) // U stays low: every update waits, then applies in time order
        }
        s.finishWriter("w")
      }
      val at = (1 + r.nextInt(n)) * 10L
      val latest = minState.fetchLatest(new Key("k".getBytes), at).asInstanceOf[FetchAnswer.Found].value
      val prefix = byTime.takeWhile(_._1 <= at).map(_._2)
      assert(same(decode(latest), oracle(prefix, min = true)), s"round $round: min State at $at")
      val from = r.nextInt(n) * 10L
      for (f <- Seq("min", "max")) {
        val inRange = byTime.filter { case (time, _) => time >= from && time <= at }.map(_._2)
        replace.fetch(FetchRequest(new Key("k".getBytes), at, replace.fetchRule(f, from))) match {
          case FetchAnswer.Aggregate(bytes, _, _) =>
            assert(same(decode(bytes), oracle(inRange, f == "min")), s"round $round: $f over [$from, $at]")
          case FetchAnswer.Absent => assert(inRange.isEmpty, s"round $round: $f over [$from, $at]")
          case other => fail(s"round $round: $f answered $other")
        }
      }
    }
  }
}
