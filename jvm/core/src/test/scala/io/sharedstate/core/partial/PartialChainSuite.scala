package io.sharedstate.core.partial

import io.sharedstate.core.{FetchAnswer, Key, State, StateSpec, UpdateBatch}
import io.sharedstate.core.fetch.{FetchRequest, FetchRule}
import io.sharedstate.core.row.{BinaryRow, ValueType}
import io.sharedstate.core.rules.{NumericOp, NumericRule, UpdateRule}
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks
import scala.util.Random

/**
 * A partial State's long chains, applied by instance in parallel ([[PartialChain]]), against
 * [[PartialRule]] applied update by update: the same instance set after every update and the same
 * failures, on random chains (instances per task and per query, a base set holding other
 * instances, a rule that fails on some updates); and through a State, a hot key written by three
 * tasks out of order in one epoch (one long chain) equals the same updates committed in small
 * epochs (short chains, update by update), version for version, and a naive per-instance model.
 */
class PartialChainSuite extends AnyFunSuite with ScalaCheckPropertyChecks {

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful =
      org.scalactic.anyvals.PosInt.from(sys.env.get("SHAREDSTATE_MODEL_RUNS").map(_.toInt).getOrElse(60)).get)

  private val t = ValueType.parse("n BIGINT")
  private def v(n: Long) = BinaryRow.encode(t, Array[AnyRef](java.lang.Long.valueOf(n)))
  private def n(bytes: Array[Byte]): Long = BinaryRow.decode(t, bytes)(0).asInstanceOf[Long]

  // Fails on incoming multiples of 7: the chain goes on, the instance keeps its value.
  private final class Picky(inner: UpdateRule) extends UpdateRule {
    def name: String = "picky"
    def apply(previous: Array[Byte], incoming: Array[Byte]): Array[Byte] =
      if (n(incoming) % 7 == 0) throw new IllegalArgumentException(s"no ${n(incoming)}")
      else inner(previous, incoming)
  }

  private val rules: Seq[UpdateRule] = Seq(
    new NumericRule("sum", t, NumericOp.Sum),
    new NumericRule("max", t, NumericOp.Max),
    new Picky(new NumericRule("sum", t, NumericOp.Sum)))

  test("by instance in parallel equals update by update: every set and every failure") {
    forAll(Gen.choose(Long.MinValue, Long.MaxValue), Gen.oneOf(rules.indices)) { (seed, r) =>
      val rnd = new Random(seed)
      val inner = rules(r)
      val instances =
        if (rnd.nextBoolean()) Array.tabulate(1 + rnd.nextInt(4))(identity)
        else Array.fill(1 + rnd.nextInt(3))(rnd.nextInt(Int.MaxValue))
      val base =
        if (rnd.nextBoolean()) null
        else {
          val is = (instances.take(rnd.nextInt(instances.length + 1)) ++ Array(rnd.nextInt(50) + 1000)).distinct.sorted
          PartialValues.encode(is, is.map(_ => v(rnd.nextInt(100).toLong)))
        }
      val size = if (rnd.nextInt(4) == 0) 1 + rnd.nextInt(50) else 1 + rnd.nextInt(12000)
      val incoming =
        Array.fill(size)(PartialValues.single(instances(rnd.nextInt(instances.length)), v(rnd.nextInt(60) - 20L)))

      val got = PartialChain(inner, base, incoming)
      val rule = new PartialRule(inner)
      var previous = base
      incoming.indices.foreach { p =>
        val expected =
          try Right(rule(previous, incoming(p)))
          catch { case e: Exception => Left(e.getMessage) }
        expected match {
          case Right(set) =>
            assert(got.failures(p) == null, s"update $p")
            assert(java.util.Arrays.equals(got.sets(p), set), s"update $p of $size")
            previous = set
          case Left(reason) =>
            assert(got.failures(p) == reason && got.sets(p) == null, s"update $p")
        }
      }
    }
  }

  test("the sink's one-instance form is the instance set of that one instance") {
    val rnd = new Random(3)
    for (_ <- 0 until 200) {
      val instance = if (rnd.nextBoolean()) rnd.nextInt(8) else rnd.nextInt(Int.MaxValue)
      val value = Array.fill(rnd.nextInt(40))(rnd.nextInt(256).toByte)
      val single = PartialValues.single(instance, value)
      assert(java.util.Arrays.equals(single, PartialValues.encode(Array(instance), Array(value))))
      assert(PartialValues.instances(single).toSeq == Seq(instance))
      assert(java.util.Arrays.equals(PartialValues.valueOf(single, instance), value))
    }
  }

  test("updates carrying several instances, or a malformed base, are left to the update-by-update path") {
    val sum = new NumericRule("sum", t, NumericOp.Sum)
    assert(PartialChain(sum, null, Array(PartialValues.encode(Array(0, 1), Array(v(1), v(2))))) == null)
    assert(PartialChain(sum, v(3), Array(PartialValues.single(0, v(1)))) == null)
  }

  test("a hot key's long chain (three tasks, out of order, one epoch) equals short chains and the model") {
    val rnd = new Random(25)
    val key = new Key("all".getBytes("UTF-8"))
    def state(name: String) = new State(StateSpec(name, "k STRING", "n BIGINT", 2, "sum", partial = "max"))
    val oneEpoch = state("long")
    val small = state("short")
    Seq(oneEpoch, small).foreach(_.registerWriter("w"))
    val size = 3 * PartialChain.Threshold
    val times = rnd.shuffle((0 until size).map(i => 1000L + i / 2)) // pairs of equal times too
    val updates = times.map(time => (time, rnd.nextInt(3), rnd.nextInt(100) - 30L)) // (time, task, value)

    val batches = Array.fill(3)(new UpdateBatch)
    updates.foreach { case (time, task, x) => batches(task).add(key.bytes, time, PartialValues.single(task, v(x))) }
    batches.indices.foreach(task => oneEpoch.stage("w", 0, task, batches(task)))
    oneEpoch.commitEpoch("w", 0, 1000L + size)

    // The same updates in time order, a short epoch per 500 of them (equal times in one epoch).
    updates.zipWithIndex.sortBy { case ((time, _, _), i) => (time, i) }.map(_._1).grouped(500).zipWithIndex.foreach {
      case (group, epoch) =>
        val bs = Array.fill(3)(new UpdateBatch)
        group.foreach { case (time, task, x) => bs(task).add(key.bytes, time, PartialValues.single(task, v(x))) }
        bs.indices.foreach(task => small.stage("w", epoch, task, bs(task)))
        small.commitEpoch("w", epoch, group.map(_._1).max)
    }
    small.commitEpoch("w", 1000, 1000L + size)

    def versions(s: State): Seq[(Long, Long)] = s.fetch(FetchRequest(key, 1000L + size - 1, FetchRule.Range(0))) match {
      case FetchAnswer.Pairs(ts, vs) => ts.toSeq.zip(vs.toSeq.map(n))
      case other => fail(s"$other")
    }
    assert(versions(oneEpoch) == versions(small))
    assert(versions(oneEpoch).size == size / 2)
    for (_ <- 0 until 200) {
      val at = 1000L + rnd.nextInt(size / 2)
      // per task: the sum of its updates at or before `at` in arrival order; merged by max
      val want = updates.filter(_._1 <= at).groupBy(_._2).values.map(_.map(_._3).sum).max
      oneEpoch.fetch(FetchRequest(key, at)) match {
        case FetchAnswer.Found(_, bytes) => assert(n(bytes) == want, s"at $at")
        case other => fail(s"$other")
      }
    }
  }
}
