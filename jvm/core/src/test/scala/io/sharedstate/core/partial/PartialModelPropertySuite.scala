package io.sharedstate.core.partial

import io.sharedstate.core.{EventTime, FetchAnswer, Key, State, StateSpec, UpdateBatch}
import io.sharedstate.core.fetch.{FetchRequest, FetchRule}
import io.sharedstate.core.row.{BinaryRow, ValueType}
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks
import scala.collection.mutable
import scala.util.Random

/**
 * Partial States against a naive model on random histories: two writer queries, each with up to
 * four tasks (instances) sending out-of-order updates (some late), commits in random interleavings.
 * The model keeps every accepted update with its instance and answers a global fetch at t by
 * folding the rule per instance over the updates at or before t and merging the instances; a local
 * fetch folds one instance. A partial `sum`/`sum` State must also equal a plain `sum` State fed the
 * same updates: the merged value does not depend on how the updates were split into instances.
 */
class PartialModelPropertySuite extends AnyFunSuite with ScalaCheckPropertyChecks {

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful =
      org.scalactic.anyvals.PosInt.from(sys.env.get("SHAREDSTATE_MODEL_RUNS").map(_.toInt).getOrElse(200)).get)

  private val t = ValueType.parse("n BIGINT")
  private def v(n: Long) = BinaryRow.encode(t, Array[AnyRef](java.lang.Long.valueOf(n)))
  private def read(a: FetchAnswer): Option[Long] = a match {
    case FetchAnswer.Found(_, b) => Some(BinaryRow.decode(t, b)(0).asInstanceOf[Long])
    case FetchAnswer.Absent => None
    case other => fail(s"unexpected $other")
  }

  private val cases = Seq(("sum", "sum"), ("sum", "max"), ("max", "min"), ("min", "sum"))

  test("global and local fetches equal the model; partial sum/sum equals a plain sum State") {
    forAll(Gen.choose(Long.MinValue, Long.MaxValue), Gen.oneOf(cases)) { case (seed, (rule, merge)) =>
      val rnd = new Random(seed)
      val partitions = 1 + rnd.nextInt(3)
      val partial = new State(StateSpec("p", "k STRING", "n BIGINT", partitions, rule, partial = merge))
      val plain = new State(StateSpec("q", "k STRING", "n BIGINT", partitions, rule))
      val fold: (Long, Long) => Long = rule match { case "sum" => _ + _; case "max" => math.max; case _ => math.min }
      val mergeF: (Long, Long) => Long = merge match { case "sum" => _ + _; case "max" => math.max; case _ => math.min }
      val keys = Seq("a", "b", "c").map(s => new Key(s.getBytes("UTF-8")))
      // accepted updates: key index, time, instance, value
      val accepted = mutable.ArrayBuffer.empty[(Int, Long, Int, Long)]
      val writers = Seq("w0", "w1")
      val progress = mutable.Map("w0" -> EventTime.MinusInfinity, "w1" -> EventTime.MinusInfinity)
      val epoch = mutable.Map("w0" -> 0L, "w1" -> 0L)
      val open = mutable.Map.empty[String, mutable.Map[Int, Seq[(Int, Long, Long)]]]
      writers.foreach { w => partial.registerWriter(w); plain.registerWriter(w) }
      var frontier = 0L
      def u = progress.values.min

      def check(): Unit = if (EventTime.isFinite(u)) for (_ <- 0 until 4) {
        val ki = rnd.nextInt(keys.size)
        val at = u - 1 - rnd.nextInt(30)
        val mine = accepted.filter(a => a._1 == ki && a._2 <= at)
        val perInstance = mine.groupBy(_._3).map { case (i, us) => i -> us.map(_._4).reduce(fold) }
        val global = perInstance.toSeq.sortBy(_._1).map(_._2).reduceOption(mergeF)
        assert(read(partial.fetch(FetchRequest(keys(ki), at))) == global, s"global $ki@$at")
        val inst = rnd.nextInt(4)
        assert(read(partial.fetch(FetchRequest(keys(ki), at, LocalFetch(FetchRule.Latest, inst)))) ==
            perInstance.get(inst), s"local $inst $ki@$at")
        if (rule == "sum" && merge == "sum")
          assert(read(plain.fetch(FetchRequest(keys(ki), at))) == global, s"plain $ki@$at")
      }

      for (_ <- 0 until 40) {
        val w = writers(rnd.nextInt(2))
        if (rnd.nextInt(3) > 0) {
          val task = rnd.nextInt(4)
          val rows =
            Seq.fill(rnd.nextInt(4))((rnd.nextInt(keys.size), frontier - 10 + rnd.nextInt(30), rnd.nextInt(20) - 5L))
          val pb = new UpdateBatch
          val qb = new UpdateBatch
          rows.foreach { case (ki, time, x) =>
            pb.add(keys(ki).bytes, time, PartialValues.single(task, v(x)))
            qb.add(keys(ki).bytes, time, v(x))
          }
          partial.stage(w, epoch(w), task, pb)
          plain.stage(w, epoch(w), task, qb) // a retried task replaces its earlier attempt in both
          open.getOrElseUpdate(w, mutable.Map.empty)(task) = rows
        } else {
          val before = u
          open.remove(w).foreach(_.toSeq.sortBy(_._1).foreach { case (task, rows) =>
            rows.foreach { case (ki, time, x) => if (time >= before) accepted += ((ki, time, task, x)) }
          })
          frontier += rnd.nextInt(10)
          progress(w) = math.max(progress(w), frontier)
          partial.commitEpoch(w, epoch(w), progress(w))
          plain.commitEpoch(w, epoch(w), progress(w))
          epoch(w) += 1
          check()
        }
      }
    }
  }
}
