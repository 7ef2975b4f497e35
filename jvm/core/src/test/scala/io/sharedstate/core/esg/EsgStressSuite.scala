package io.sharedstate.core.esg

import org.scalatest.funsuite.AnyFunSuite

import java.util.concurrent.atomic.{AtomicBoolean, AtomicInteger}
import java.util.concurrent.{ConcurrentHashMap, CountDownLatch, TimeUnit}
import scala.collection.mutable.ArrayBuffer

/**
 * Sources and readers run in their own threads while sources and readers join and leave. The oracle:
 * the ESG's order is a function of the inputs (by timestamp, then source slot, then each source's add
 * order), so every reader must see exactly a slice of that sorted sequence: a reader present from the
 * start sees all of it, a joining reader the suffix from its caller's position, a leaving reader a
 * prefix. That rules out loss, duplication, reordering and disagreement between readers.
 */
class EsgStressSuite extends AnyFunSuite {
  import EsgStressSuite._

  for (seed <- StressRuns.seeds) {
    test(s"elastic run with an order oracle (seed $seed)") {
      new Run(seed, StressRuns.scaled(20000)).check()
    }
  }
}

object EsgStressSuite {
  private val Timeout = 120L

  /** What a source added, in add order: the oracle sorts these. */
  final case class Added(ts: Long, source: Int, seq: Int, watermark: Boolean)

  private def key(t: EsgTuple[Long]): Added =
    Added(t.timestamp, t.source, if (t.isWatermark) -1 else (t.payload % 1000000L).toInt, t.isWatermark)

  final class Run(seed: Long, perSource: Int) {
    private val esg = ElasticScaleGate[Long](sources = 3, readers = 2, maxSources = 6, maxReaders = 5,
      capacityPerSource = 64, startTime = 0, levels = 6, seed = seed.toInt)
    private val added = new ConcurrentHashMap[Int, Vector[Added]]()
    private val seen = new ConcurrentHashMap[Int, Vector[EsgTuple[Long]]]()
    private val sourcesDone = new AtomicBoolean(false)
    private val errors = new java.util.concurrent.ConcurrentLinkedQueue[Throwable]()
    private val source3Joined, source4Joined, reader2Joined, reader3Joined = new CountDownLatch(1)
    private val source4Winners, reader3Winners = new AtomicInteger()
    @volatile private var reader2Start, reader3Start = -1
    @volatile private var reader3Caller = -1
    @volatile private var reader1Left = -1

    private def thread(name: String)(body: => Unit): Thread = {
      val t = new Thread(() =>
          try body
          catch { case e: Throwable => errors.add(e) }, name)
      t.setDaemon(true)
      t.start()
      t
    }

    /** Adds `n` tuples with random non-decreasing timestamps, heartbeats now and then. */
    private def produce(slot: Int, n: Int, start: Long)(hook: Int => Boolean): Unit = {
      val rnd = new scala.util.Random(seed * 100 + slot)
      val log = ArrayBuffer.empty[Added]
      var ts = start
      var i = 0
      var going = true
      while (going && i < n) {
        ts += rnd.nextInt(3)
        if (rnd.nextInt(50) == 0) {
          esg.heartbeat(ts, slot)
          log += Added(ts, slot, -1, watermark = true)
        } else {
          esg.add(ts, slot * 1000000L + i, slot)
          log += Added(ts, slot, i, watermark = false)
        }
        i += 1
        going = hook(i)
      }
      if (going) esg.heartbeat(Long.MaxValue, slot) // releases the last tuple; itself never delivered
      added.put(slot, log.toVector)
    }

    private def consume(slot: Int)(hook: Int => Boolean): Unit = {
      val log = ArrayBuffer.empty[EsgTuple[Long]]
      var going = true
      var idle = 0
      while (going) {
        val t = esg.get(slot)
        if (t != null) {
          log += t
          going = hook(log.size)
        } else if (sourcesDone.get()) {
          var last = esg.get(slot) // everything is in: drain what is left, then stop
          while (last != null) { log += last; last = esg.get(slot) }
          going = false
        } else {
          idle += 1
          if (idle % 64 == 0) Thread.`yield`() else Thread.onSpinWait()
        }
      }
      seen.put(slot, log.toVector)
    }

    def check(): Unit = {
      val n = perSource
      val sources = Seq(
        thread("source-0")(produce(0, n, 0) { i =>
          if (i == n / 4) {
            if (esg.addSources(Set(3), 0)) source3Joined.countDown()
            else throw new AssertionError("source 3 was not added")
          }
          if (i == n / 3 && esg.addSources(Set(4), 0)) { source4Winners.incrementAndGet(); source4Joined.countDown() }
          true
        }),
        thread("source-1")(produce(1, n, 0) { i =>
          // Leaves half-way: removes itself; its flush releases its last tuple.
          if (i == n / 2) { assert(esg.removeSources(Set(1))); false }
          else true
        }),
        thread("source-2")(produce(2, n, 0) { i =>
          if (i == n / 3 && esg.addSources(Set(4), 2)) { source4Winners.incrementAndGet(); source4Joined.countDown() }
          true
        }),
        thread("source-3") {
          assert(source3Joined.await(Timeout, TimeUnit.SECONDS))
          produce(3, n / 2, esg.lowerBound(3))(_ => true)
        },
        thread("source-4") {
          assert(source4Joined.await(Timeout, TimeUnit.SECONDS))
          produce(4, n / 2, esg.lowerBound(4))(_ => true)
        }
      )
      val readers = Seq(
        thread("reader-0")(consume(0) { k =>
          if (k == n / 5) {
            assert(esg.addReaders(Set(2), 0), "reader 2 is new")
            reader2Start = k
            reader2Joined.countDown()
          }
          if (k == n / 2 && esg.addReaders(Set(3), 0)) { reader3Start = k; reader3Caller = 0; winReader3() }
          true
        }),
        thread("reader-1")(consume(1) { k =>
          if (k == n / 2 && esg.addReaders(Set(3), 1)) { reader3Start = k; reader3Caller = 1; winReader3() }
          if (k == n) { assert(esg.removeReaders(Set(1))); reader1Left = k; false }
          else true
        }),
        thread("reader-2") {
          assert(reader2Joined.await(Timeout, TimeUnit.SECONDS))
          consume(2)(_ => true)
        },
        thread("reader-3") {
          assert(reader3Joined.await(Timeout, TimeUnit.SECONDS))
          consume(3)(_ => true)
        }
      )
      sources.foreach(_.join(TimeUnit.SECONDS.toMillis(Timeout)))
      sourcesDone.set(true)
      readers.foreach(_.join(TimeUnit.SECONDS.toMillis(Timeout)))
      assert(errors.isEmpty, errors.toArray.mkString("thread errors: ", "; ", ""))
      assert((sources ++ readers).forall(!_.isAlive), "a thread did not finish: a lost tuple or a deadlock")

      // The oracle: everything added, minus each remaining source's final Long.MaxValue heartbeat.
      val expected = (0 to 4).flatMap(s => added.get(s)).filterNot(_.ts == Long.MaxValue)
        .sortBy(a => (a.ts, a.source)) // stable: keeps each source's add order for equal keys
      val full = seen.get(0).map(key)
      assert(source4Winners.get == 1 && reader3Winners.get == 1, "one winner per concurrent membership call")
      assert(full.size == expected.size, s"reader 0 saw ${full.size} of ${expected.size}")
      assert(full == expected, "reader 0's sequence differs from the sorted inputs")
      assert(seen.get(0).map(_.timestamp).sliding(2).forall(p => p.size < 2 || p(0) <= p(1)))
      assert(seen.get(1).map(key) == expected.take(reader1Left), "reader 1 saw a prefix up to its leaving")
      assert(seen.get(2).map(key) == expected.drop(reader2Start), "reader 2 saw reader 0's suffix")
      assert(seen.get(3).map(key) == expected.drop(reader3Start), s"reader 3 saw reader $reader3Caller's suffix")
      // The same objects, not just equal keys: each node is delivered once and shared by all readers.
      assert(seen.get(2).zip(seen.get(0).drop(reader2Start)).forall { case (a, b) => a eq b })
    }

    private def winReader3(): Unit = { reader3Winners.incrementAndGet(); reader3Joined.countDown() }
  }
}
