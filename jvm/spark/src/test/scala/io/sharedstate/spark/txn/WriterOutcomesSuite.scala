package io.sharedstate.spark.txn

import io.sharedstate.core.EventTime
import io.sharedstate.core.txn.{TransactionId, TransactionOutcome}
import io.sharedstate.spark.durable.ForkFreeRawLocalFileSystem
import java.nio.file.Files
import org.apache.hadoop.conf.Configuration
import org.scalatest.funsuite.AnyFunSuite
import scala.collection.mutable
import scala.util.Random

/**
 * A transactional writer's outcomes kept in its query's checkpoint: a driver killed at any point
 * (between a step's decision and the next bound, after a batch is bound but before Spark commits it,
 * ...) and a new one resuming from the checkpoint emit every decided outcome exactly once over the
 * committed batches, with the same values, and a re-run batch emits what its first attempt did. The
 * batches are bound as TransactionRuns binds them (`from` = the previous `until`, `until` = U then).
 */
class WriterOutcomesSuite extends AnyFunSuite {
  private val conf = ForkFreeRawLocalFileSystem.configure(new Configuration()) // as the plugin's own are

  private def outcome(epoch: Long, i: Int, time: Long, late: Boolean): TransactionOutcome =
    TransactionOutcome(
      TransactionId("w", epoch, 0, i),
      time,
      committed = !late && i % 3 != 0,
      IndexedSeq(Some(Array[Byte](i.toByte, 7)), None),
      if (late) "late" else if (i % 3 == 0) "condition" else null,
      Array[Byte](1, 2, i.toByte)
    )

  private def comparable(o: TransactionOutcome) =
    (o.id, o.time, o.committed, o.reason, o.reads.map(_.map(_.toSeq)), o.payload.toSeq)

  /** One driver's run: decisions made as U advances, batches bound and committed in order. */
  private final class Driver(dir: String, rnd: Random, var u: Long) {
    val outcomes = new WriterOutcomes(Some(TransactionOutcomeLog.of(dir, "node", conf)))
    private var lastUntil = EventTime.MinusInfinity
    val bounds = mutable.Map.empty[Long, TransactionRuns.Bound]

    def resume(committed: Long): Unit = {
      val resumed = outcomes.resume(committed)
      resumed.foreach(b => bounds(b.batch) = b)
      resumed.lastOption.foreach(b => lastUntil = b.until)
    }

    /** A step of the group: U moves on, the transactions of epoch `epoch` below it decided; some late ones. */
    def step(epoch: Long): Seq[TransactionOutcome] = {
      val newU = u + 1 + rnd.nextInt(20)
      val finals = (0 until rnd.nextInt(5)).map(i => outcome(epoch, i, u + rnd.nextInt((newU - u).toInt), late = false))
      val late = (0 until (if (rnd.nextInt(4) == 0) 1 + rnd.nextInt(2) else 0))
        .map(i => outcome(epoch, 100 + i, u - 1 - rnd.nextInt(50), late = true))
      outcomes.add(finals.sorted(TransactionOutcome.Order), late)
      u = newU
      finals ++ late
    }

    /** The batch's bound, fixed once (a kept one is used again), and what it emits. */
    def run(batch: Long): Seq[TransactionOutcome] = {
      val b = bounds.getOrElseUpdate(batch, {
          val from = lastUntil
          val bound = TransactionRuns.Bound(batch, from, u, outcomes.take(batch, from))
          outcomes.log.get.writeBound(bound)
          bound
        })
      lastUntil = b.until
      outcomes.of(b)
    }

    def committed(batch: Long): Unit = outcomes.log.get.emitted(bounds(batch), kept = 8)
  }

  test("a new driver emits every decided outcome once, with the same values; a re-run batch emits the same") {
    for (seed <- 1 to 40) {
      val rnd = new Random(seed)
      val dir = Files.createTempDirectory("txn-outcomes-").toString
      val first = new Driver(dir, rnd, 0L)
      val decided = mutable.ArrayBuffer.empty[TransactionOutcome]
      val emitted = mutable.ArrayBuffer.empty[TransactionOutcome]
      val batches = 5 + rnd.nextInt(15)
      var epoch = 0L
      (0 until batches).foreach { b =>
        (0 until rnd.nextInt(3)).foreach { _ => decided ++= first.step(epoch); epoch += 1 }
        emitted ++= first.run(b)
        first.committed(b)
      }
      // The kill: the next batch may be bound (and emitted into a sink Spark never committed), decisions may follow.
      val cut = batches.toLong
      val firstAttempt = if (rnd.nextBoolean()) Some(first.run(cut)) else None
      val unbound = mutable.ArrayBuffer.empty[TransactionOutcome] // decided after the last bound
      (0 until rnd.nextInt(3)).foreach { _ => unbound ++= first.step(epoch); epoch += 1 }
      decided ++= unbound

      val second = new Driver(dir, rnd, first.u)
      second.resume(cut - 1)
      // A step decided before the kill but not journaled is decided again, with the same values (no batch
      // bound after it: a bound reads U, published after the step is journaled, and takes late ones after).
      if (unbound.nonEmpty && rnd.nextBoolean()) {
        val again = unbound.takeRight(1 + rnd.nextInt(3))
        second.outcomes.add(again.filterNot(_.reason == "late").toSeq.sorted(TransactionOutcome.Order),
          again.filter(_.reason == "late").toSeq)
      }
      val rerun = second.run(cut)
      firstAttempt.foreach(a => assert(rerun.map(comparable) == a.map(comparable), s"seed $seed: the re-run batch"))
      emitted ++= rerun
      second.committed(cut)
      (cut + 1 to cut + 3).foreach { b =>
        (0 until rnd.nextInt(3)).foreach { _ => decided ++= second.step(epoch); epoch += 1 }
        emitted ++= second.run(b)
        second.committed(b)
      }
      // Everything final and every late one taken: one more step past every time, one more batch.
      second.u = Long.MaxValue - 1
      emitted ++= second.run(cut + 4)
      assert(emitted.map(_.id).distinct.size == emitted.size, s"seed $seed: an outcome emitted twice")
      assert(emitted.map(comparable).sortBy(_._1) == decided.map(comparable).sortBy(_._1), s"seed $seed: outcomes")
    }
  }
}
