package io.sharedstate.core.concurrency

import io.sharedstate.core._
import java.util.concurrent.{ConcurrentLinkedQueue, CountDownLatch, TimeUnit}
import java.util.concurrent.atomic.AtomicBoolean
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/**
 * Stress with fixed seeds and an oracle: one committer stages out-of-order updates and advances U
 * epoch by epoch (applying in parallel chains over many keys), a reader advances F behind U, a
 * sweeper compacts, and fetcher threads ask read-committed `latest` right below the U they just saw
 * (where a U published before its updates were applied would show) and at random older times. The
 * oracle is the full update schedule, known in advance from the seed: every answer must equal the
 * newest scheduled pair at or before t, or fail with "below F" when t < F.
 */
class ConcurrentStateStressSuite extends AnyFunSuite {
  import ConcurrentStateStressSuite.Update
  private val long = sys.props.contains("sharedstate.stress") || sys.env.contains("SHAREDSTATE_STRESS")

  private def run(seed: Long, epochs: Int, keys: Int, partitions: Int): Unit = {
    val rnd = new Random(seed)
    // Epoch e covers times [100e, 100e + 100) and commits progress 100(e + 1): nothing is late.
    // Per epoch, the rows of task 0 then task 1: the order the engine receives them in.
    val schedule = (0 until epochs).map { e =>
      Seq.fill(2)(Seq.fill(keys / 4 + rnd.nextInt(keys / 2))(Update(rnd.nextInt(keys), e * 100L + rnd.nextInt(100),
            s"s$seed-e$e-${rnd.nextInt()}")))
    }
    // Ties at one (key, time): the later arrival (task id, then row) wins under replace.
    val finalPairs = schedule.flatten.flatten.groupBy(_.key).map { case (k, us) =>
      k -> us.foldLeft(Map.empty[Long, String])((m, u) => m.updated(u.time, u.value)).toSeq.sortBy(_._1).toArray
    }
    def oracle(k: Int, t: Long): Option[(Long, String)] =
      finalPairs.get(k).flatMap(ps => ps.filter(_._1 <= t).lastOption)

    val state = new State(StateSpec("stress", "k INT", "v STRING", partitions, "replace"))
    state.registerWriter("w"); state.registerReader("r")
    val stop = new AtomicBoolean(false)
    val errors = new ConcurrentLinkedQueue[String]()
    val start = new CountDownLatch(1)
    def thread(name: String)(body: => Unit): Thread = {
      val t = new Thread(() => {
          start.await()
          try body
          catch { case e: Throwable => errors.add(s"$name: $e") }
        }, name)
      t.start(); t
    }
    val committer = thread("committer") {
      schedule.zipWithIndex.foreach { case (tasks, e) =>
        // Task 1 is staged first: the commit still takes tasks in id order.
        tasks.zipWithIndex.reverse.foreach { case (rows, task) =>
          val b = new UpdateBatch
          rows.foreach(u => b.add(s"${u.key}".getBytes, u.time, u.value.getBytes))
          state.stage("w", e, task, b)
        }
        state.commitEpoch("w", e, (e + 1) * 100L)
      }
      stop.set(true)
    }
    val reader = thread("reader") {
      var f = 0L
      while (!stop.get) {
        val u = state.updateProgress
        if (EventTime.isFinite(u) && u - 150 > f) { f = u - 150; state.reportFetchProgress("r", f) }
        Thread.onSpinWait()
      }
    }
    val sweeper = thread("sweeper") { while (!stop.get) state.compactionStep(64) }
    val fetchers = (0 until 2).map { i =>
      thread(s"fetcher$i") {
        val r = new Random(seed * 31 + i)
        var checked = 0L
        while (!stop.get || checked == 0) {
          val u = state.updateProgress
          if (EventTime.isFinite(u)) {
            val t = if (r.nextBoolean()) u - 1 else u - 1 - r.nextInt(300)
            val k = r.nextInt(keys)
            val got =
              try state.fetchLatest(new Key(s"$k".getBytes), t) match {
                  case FetchAnswer.Found(ts, v) => Some(Some(ts -> new String(v)))
                  case FetchAnswer.Absent => Some(None)
                  case FetchAnswer.NotYet => throw new AssertionError(s"NotYet at t=$t below the U=$u just read")
                }
              catch { case e: SharedStateException if e.getMessage.contains("below its fetch progress") => None }
            got.foreach { answer =>
              if (answer != oracle(k, t))
                errors.add(s"seed $seed: fetch($k, $t) at U=$u gave $answer, oracle ${oracle(k, t)}")
            }
            checked += 1
          }
        }
      }
    }
    start.countDown()
    (Seq(committer, reader, sweeper) ++ fetchers).foreach(_.join(TimeUnit.MINUTES.toMillis(5)))
    val found = errors.toArray.take(5).mkString("\n")
    assert(errors.size == 0, found)
    // After the run: every key, every time, against the oracle.
    state.deregisterReader("r")
    for (k <- 0 until keys; t <- Seq(state.fetchProgress, state.fetchProgress + 57, epochs * 100L - 1)) {
      val got = state.fetchLatest(new Key(s"$k".getBytes), t) match {
        case FetchAnswer.Found(ts, v) => Some(ts -> new String(v))
        case _ => None
      }
      assert(got == oracle(k, t), s"seed $seed key $k t $t")
    }
  }

  test("concurrent commits, fetches, F advance and compaction agree with the oracle (fixed seeds)") {
    val seeds = if (long) 1L to 40L else 1L to 4L
    seeds.foreach(seed =>
      run(seed, epochs = if (long) 400 else 60, keys = if (long) 20000 else 4000, partitions = 1 + (seed % 3).toInt))
  }
}

object ConcurrentStateStressSuite {
  private final case class Update(key: Int, time: Long, value: String)
}
