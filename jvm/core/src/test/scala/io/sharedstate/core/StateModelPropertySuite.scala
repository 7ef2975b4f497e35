package io.sharedstate.core

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks
import scala.collection.mutable
import scala.util.Random

/**
 * The engine against a naive reference model (full history in a list, answers by scanning), on
 * random interleavings of task staging (with retries), epoch commits (with replays), progress
 * reports and read-committed fetches.
 */
class StateModelPropertySuite extends AnyFunSuite with ScalaCheckPropertyChecks {

  implicit override val generatorDrivenConfig: PropertyCheckConfiguration =
    PropertyCheckConfiguration(minSuccessful = 300)

  /** The reference: no indexes, no staging order tricks, just the contract of DESIGN.md section 2. */
  final class Model {
    val progress = mutable.LinkedHashMap.empty[String, Long]
    val history = mutable.ArrayBuffer.empty[(String, Long, String, Long)] // key, time, value, arrival
    var arrivals = 0L
    var late = 0
    def u: Long = if (progress.isEmpty) EventTime.MinusInfinity else progress.values.min
    def register(w: String): Unit = if (!progress.contains(w)) {
      val now = u
      progress(w) = if (EventTime.isFinite(now)) now else EventTime.MinusInfinity
    }
    def commit(w: String, rows: Seq[(String, Long, String)], p: Long): Unit = {
      val now = u
      rows.foreach { case (k, t, v) =>
        if (t < now) late += 1 else { arrivals += 1; history += ((k, t, v, arrivals)) }
      }
      progress(w) = math.max(progress(w), p)
    }
    def fetch(k: String, t: Long): Option[Option[(Long, String)]] =
      if (t >= u) None
      else Some(history.filter(h => h._1 == k && h._2 <= t).sortBy(h => (h._2, h._4)).lastOption.map(h => (h._2, h._3)))
  }

  private def bytes(s: String) = s.getBytes("UTF-8")

  test("engine answers equal the reference model on random interleavings") {
    forAll(Gen.choose(Long.MinValue, Long.MaxValue)) { seed =>
      val rnd = new Random(seed)
      val state = new State(StateSpec("s", "k STRING", "v STRING", 1 + rnd.nextInt(4), "replace"))
      val model = new Model
      val writers = Seq("w0", "w1", "w2").take(1 + rnd.nextInt(3))
      val nextEpoch = mutable.Map.empty[String, Long].withDefaultValue(0L)
      // per writer: the tasks staged for its open epoch (a retry replaces the task's rows)
      val open = mutable.Map.empty[String, mutable.SortedMap[Int, Seq[(String, Long, String)]]]
      val maxSeen = mutable.Map.empty[String, Long].withDefaultValue(0L)
      val keys = Seq("a", "b", "c", "d", "e")
      writers.take(1).foreach { w => state.registerWriter(w); model.register(w) }

      for (_ <- 0 until 60) {
        rnd.nextInt(10) match {
          case 0 =>
            val w = writers(rnd.nextInt(writers.size))
            state.registerWriter(w); model.register(w)
          case 1 | 2 | 3 =>
            val w = writers(rnd.nextInt(writers.size))
            if (model.progress.contains(w)) {
              val task = rnd.nextInt(3)
              // out of order, around the writer's own frontier, sometimes behind U (late)
              val rows = Seq.fill(rnd.nextInt(4)) {
                (keys(rnd.nextInt(keys.size)), maxSeen(w) - 20 + rnd.nextInt(40).toLong, s"v${rnd.nextInt(100)}")
              }
              val b = new UpdateBatch
              rows.foreach { case (k, t, v) => b.add(bytes(k), t, bytes(v)) }
              state.stage(w, nextEpoch(w), task, b)
              open.getOrElseUpdate(w, mutable.SortedMap.empty)(task) = rows
            }
          case 4 | 5 =>
            val w = writers(rnd.nextInt(writers.size))
            if (model.progress.contains(w)) {
              val rows = open.remove(w).map(_.values.flatten.toSeq).getOrElse(Nil)
              val batchMax = (rows.map(_._2) :+ maxSeen(w)).max
              maxSeen(w) = batchMax + rnd.nextInt(5)
              val p = maxSeen(w) - rnd.nextInt(10) // watermark: max seen minus lateness
              val epoch = nextEpoch(w)
              state.commitEpoch(w, epoch, p)
              model.commit(w, rows, p)
              nextEpoch(w) = epoch + 1
              if (rnd.nextBoolean()) assert(state.commitEpoch(w, epoch, p + 1000).alreadyCommitted)
            }
          case _ =>
            val k = keys(rnd.nextInt(keys.size))
            val t = maxSeen.values.maxOption.getOrElse(0L) - rnd.nextInt(50)
            val got = state.fetchLatest(new Key(bytes(k)), t) match {
              case FetchAnswer.NotYet => None
              case FetchAnswer.Absent => Some(None)
              case FetchAnswer.Found(ts, v) => Some(Some(ts -> new String(v, "UTF-8")))
            }
            assert(got == model.fetch(k, t), s"fetch($k, $t) seed=$seed U=${state.updateProgress}")
        }
        assert(state.updateProgress == model.u, s"seed=$seed")
      }
      assert(state.rejectedUpdates.size == model.late, s"seed=$seed")
    }
  }
}
