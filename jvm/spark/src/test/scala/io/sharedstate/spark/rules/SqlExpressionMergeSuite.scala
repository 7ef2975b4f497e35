package io.sharedstate.spark.rules

import io.sharedstate.core.{FetchAnswer, Key, SharedStateException, State, StateSpec, UpdateBatch}
import io.sharedstate.core.partial.{LocalFetch, PartialValues}
import io.sharedstate.core.fetch.{FetchRequest, FetchRule}
import io.sharedstate.core.row.BinaryRow
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/**
 * `expr:` merges of partial States (Spark SQL over `a` and `b`), found through the
 * PartialMergeProvider SPI: the engine's global fetch equals the instances' values (an oracle
 * folding each instance's updates in time order) merged by the same function in plain Scala.
 */
class SqlExpressionMergeSuite extends AnyFunSuite {
  private val key = new Key("k".getBytes)

  private def load(spec: StateSpec, updates: Seq[(Int, Long, Array[AnyRef])], r: Random): State = {
    val s = new State(spec)
    s.registerWriter("w")
    r.shuffle(updates).grouped(5).zipWithIndex.foreach { case (group, epoch) =>
      group.groupBy(_._1).foreach { case (instance, us) =>
        val b = new UpdateBatch
        us.foreach { case (_, t, v) =>
          b.add(key.bytes, t, PartialValues.single(instance, BinaryRow.encode(s.valueType, v)))
        }
        s.stage("w", epoch.toLong, instance, b)
      }
      s.commitEpoch("w", epoch.toLong, 0)
    }
    s.finishWriter("w")
    assert(s.metrics.updatesRejected == 0, s.rejectedUpdates.map(_.reason))
    s
  }

  private def read(s: State, r: FetchRequest): Seq[Any] = s.fetch(r) match {
    case FetchAnswer.Found(_, v) => BinaryRow.decode(s.valueType, v).toSeq
    case other => fail(s"$other")
  }

  test("expr:struct(...) merges several columns; each instance keeps its own replace rule") {
    val r = new Random(5)
    val updates =
      Seq.tabulate(120)(i => (r.nextInt(4), i.toLong * 10 + 1, r.nextInt(100).toLong, r.nextInt(100).toLong))
    val spec = StateSpec("merged", "k STRING", "x BIGINT, y BIGINT", 2, "replace",
      partial = "expr:struct(a.x + b.x, greatest(a.y, b.y))")
    val s = load(spec, updates.map { case (i, t, x, y) => (i, t, Array[AnyRef](Long.box(x), Long.box(y))) }, r)
    for (t <- Seq(5L, 55L, 401L, 777L, 1201L)) {
      val latest = updates.filter(_._2 <= t).groupBy(_._1).map { case (i, us) => i -> us.maxBy(_._2) }
      if (latest.nonEmpty) {
        assert(read(s, FetchRequest(key, t)) == Seq(latest.values.map(_._3).sum, latest.values.map(_._4).max), s"at $t")
        latest.foreach { case (i, u) =>
          assert(read(s, FetchRequest(key, t, LocalFetch(FetchRule.Latest, i))) == Seq(u._3, u._4),
            s"instance $i at $t")
        }
      }
    }
  }

  test("a merge that Spark cannot store as the value fails when the State is defined, naming the merge") {
    val e = intercept[SharedStateException](
      StateSpec("bad", "k STRING", "n BIGINT", 1, "replace", partial = "expr:concat(a, b)"))
    assert(e.getMessage.contains("Partial merge 'expr:concat(a, b)'") && e.getMessage.contains("over `a` and `b`"))
    val u =
      intercept[SharedStateException](StateSpec("bad", "k STRING", "n BIGINT", 1, "replace", partial = "expr:old"))
    assert(u.getMessage.contains("cannot resolve"))
  }
}
