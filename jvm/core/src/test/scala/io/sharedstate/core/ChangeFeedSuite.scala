package io.sharedstate.core

import java.util.Arrays
import java.util.concurrent.{CountDownLatch, Executors, TimeUnit}
import java.util.concurrent.atomic.AtomicReference
import org.scalatest.funsuite.AnyFunSuite
import scala.collection.mutable.ArrayBuffer
import scala.util.Random

/**
 * The change feed against an oracle kept apart from the State: every accepted update (distinct
 * (key, time) pairs, all at or above U when staged, so none is late) with time in [from, U) must reach
 * every subscription once, in (time, partition, key bytes) order, whenever the subscription opened,
 * however often it polls, and whatever back-pressure the feed is under.
 */
class ChangeFeedSuite extends AnyFunSuite {
  import ChangeFeedSuite.Pair
  private val Partitions = 4

  private def pairOf(c: Change) = Pair(new String(c.key, "UTF-8"), c.time, new String(c.value, "UTF-8"))

  private def oracleOrder(pairs: Iterable[Pair]): Seq[Pair] =
    pairs.toSeq.sortWith { (a, b) =>
      if (a.time != b.time) a.time < b.time
      else {
        val (ka, kb) = (a.key.getBytes("UTF-8"), b.key.getBytes("UTF-8"))
        val (pa, pb) = (new Key(ka).partition(Partitions), new Key(kb).partition(Partitions))
        if (pa != pb) pa < pb else Arrays.compareUnsigned(ka, kb) < 0
      }
    }

  private def newState(capacity: Int): State = {
    val s = new State(StateSpec("feed", "k STRING", "v STRING", Partitions, "replace"))
    s.changeFeedCapacity = capacity
    s
  }

  /** Random writers: each epoch stages distinct (key, time) pairs above U, out of order, then commits. */
  private final class Workload(seed: Long, writers: Int, keys: Int) {
    val rnd = new Random(seed)
    val accepted = ArrayBuffer.empty[Pair]
    private val progress = Array.fill(writers)(0L)
    private val used = scala.collection.mutable.HashSet.empty[(String, Long)]
    private var epoch = 0L

    def register(s: State): Unit = (0 until writers).foreach(w => s.registerWriter(s"w$w"))

    /** One commit of a random writer; returns the new U. */
    def step(s: State): Long = {
      val w = rnd.nextInt(writers)
      val b = new UpdateBatch
      val u = math.max(s.updateProgress, 0L)
      for (_ <- 0 until rnd.nextInt(40)) {
        // Mostly near U, some far ahead (they wait several rounds), many sharing a time.
        val t = u + (if (rnd.nextInt(5) == 0) rnd.nextInt(400) else rnd.nextInt(30))
        val k = s"k${rnd.nextInt(keys)}"
        if (used.add((k, t))) {
          val p = Pair(k, t, s"v$epoch-${rnd.nextInt(1000)}")
          b.add(k.getBytes("UTF-8"), t, p.value.getBytes("UTF-8"))
          accepted += p
        }
      }
      epoch += 1
      s.stage(s"w$w", epoch, 0, b)
      progress(w) = progress(w) + rnd.nextInt(25)
      val out = s.commitEpoch(s"w$w", epoch, progress(w))
      assert(out.rejected == 0, "the workload never stages below U")
      out.updateProgress
    }

    def expected(from: Long, until: Long): Seq[Pair] =
      oracleOrder(accepted.filter(p => p.time >= from && p.time < until))
  }

  /** A consumer that reads its subscription in batches [done, completeThrough) and commits them. */
  private final class Consumer(val sub: ChangeSubscription) {
    val got = ArrayBuffer.empty[Pair]
    var done: Long = sub.from
    def poll(): Unit = {
      val until = sub.completeThrough
      if (until > done) {
        got ++= sub.changes(done, until).map(pairOf)
        sub.commit(until)
        done = until
      }
    }
  }

  for (seed <- 1 to 6; capacity <- Seq(2, 4096)) {
    test(s"every subscription gets exactly the pairs below U in order (seed $seed, capacity $capacity)") {
      val s = newState(capacity)
      val work = new Workload(seed, writers = 3, keys = 50)
      work.register(s)
      val early = new Consumer(s.subscribeChanges(EventTime.MinusInfinity)) // polls now and then
      val idle = new Consumer(s.subscribeChanges(EventTime.MinusInfinity)) // never polls until the end
      var joined = Seq.empty[(Consumer, Long)] // opened mid-stream: from earliest, and from U
      for (round <- 1 to 120) {
        work.step(s)
        if (work.rnd.nextInt(3) == 0) early.poll()
        if (round == 40) {
          joined :+= new Consumer(s.subscribeChanges(EventTime.MinusInfinity)) -> EventTime.MinusInfinity
          joined :+= new Consumer(s.subscribeChanges(s.updateProgress)) -> s.updateProgress
        }
        if (round == 80) {
          val mid = s.updateProgress / 2 // from below the feed's start, not at a round boundary
          joined :+= new Consumer(s.subscribeChanges(mid)) -> mid
        }
        joined.foreach { case (c, _) => if (work.rnd.nextBoolean()) c.poll() }
      }
      val u = s.updateProgress
      assert(u > 200, s"the workload advanced U (to $u)")
      val (drains, releases) = s.changeFeed.roomCounts
      if (capacity == 2) assert(drains > 0 && releases > 0, "back-pressure made the committer drain and release")
      else assert(drains == 0, "a large feed never fills")
      (Seq(early -> EventTime.MinusInfinity, idle -> EventTime.MinusInfinity) ++ joined).foreach { case (c, from) =>
        c.poll()
        assert(c.got == work.expected(from, u), s"subscription from ${EventTime.show(from)}")
      }
      assert(s.mergedChanges(EventTime.MinusInfinity, u).map(pairOf).toSeq == work.expected(EventTime.MinusInfinity, u))
    }
  }

  test("a re-read range gives the same changes until it is committed; reads below a commit fail") {
    val s = newState(4096)
    val work = new Workload(7, writers = 2, keys = 20)
    work.register(s)
    val sub = s.subscribeChanges(EventTime.MinusInfinity)
    (1 to 30).foreach(_ => work.step(s))
    val u1 = s.updateProgress
    val first = sub.changes(EventTime.MinusInfinity, u1).map(pairOf).toSeq
    (1 to 10).foreach(_ => work.step(s))
    assert(sub.changes(EventTime.MinusInfinity, u1).map(pairOf).toSeq == first, "a re-planned batch reads the same")
    assert(first == work.expected(EventTime.MinusInfinity, u1))
    sub.commit(u1)
    val err = intercept[SharedStateException](sub.changes(u1 - 1, s.updateProgress))
    assert(err.getMessage.contains("committed already"))
    val ahead = intercept[SharedStateException](sub.changes(u1, s.updateProgress + 1))
    assert(ahead.getMessage.contains("not final"))
    // A scan past U fails with the type a cluster reader waits on (another host may be a step ahead).
    val scan = intercept[ChangesNotFinalException](s.changes(0, u1, s.updateProgress + 1))
    assert(scan.getMessage.contains("not final yet"))
    assert(s.changes(0, u1, s.updateProgress).forall(c => c.time >= u1 && c.time < s.updateProgress))
  }

  test("the feed exists only while a subscription is open; a task finds its subscription by id") {
    val s = newState(4096)
    val work = new Workload(8, writers = 1, keys = 10)
    work.register(s)
    (1 to 5).foreach(_ => work.step(s))
    assert(!s.hasChangeFeed)
    val a = s.subscribeChanges(EventTime.MinusInfinity)
    val b = s.subscribeChanges(s.updateProgress)
    assert(s.hasChangeFeed && (s.changeSubscription(b.id) eq b))
    a.close()
    assert(s.hasChangeFeed)
    b.close()
    assert(!s.hasChangeFeed)
    assert(
      intercept[SharedStateException](s.changeSubscription(b.id)).getMessage.contains("no open change subscription"))
    (1 to 5).foreach(_ => work.step(s))
    val c = new Consumer(s.subscribeChanges(EventTime.MinusInfinity)) // a new feed, seamed on a scan again
    (1 to 5).foreach(_ => work.step(s))
    c.poll()
    assert(c.got == work.expected(EventTime.MinusInfinity, s.updateProgress))
  }

  test("many pairs at one timestamp in every partition pass a feed of capacity 2") {
    val s = newState(2)
    s.registerWriter("w")
    val sub = new Consumer(s.subscribeChanges(EventTime.MinusInfinity))
    val all = ArrayBuffer.empty[Pair]
    for (epoch <- 0 until 3) {
      val b = new UpdateBatch
      for (k <- 0 until 300) {
        val p = Pair(s"key$k", 100L * epoch + (k % 2), s"e$epoch")
        b.add(p.key.getBytes("UTF-8"), p.time, p.value.getBytes("UTF-8"))
        all += p
      }
      s.stage("w", epoch, 0, b)
      s.commitEpoch("w", epoch, 100L * (epoch + 1))
    }
    sub.poll()
    assert(sub.got == oracleOrder(all))
    assert(s.changeFeed.roomCounts._2 > 0, "sources were released at a shared timestamp")
  }

  test("concurrent writers, a continuous reader and a reader that never polls: commits never wait for readers") {
    val s = newState(3) // tiny: the committer drains and releases all the time
    val writers = 4
    (0 until writers).foreach(w => s.registerWriter(s"w$w"))
    val idle = s.subscribeChanges(EventTime.MinusInfinity)
    val tail = s.subscribeChanges(EventTime.MinusInfinity)
    val accepted = new java.util.concurrent.ConcurrentLinkedQueue[Pair]()
    val failure = new AtomicReference[Throwable]()
    val rounds = 150
    val start = new CountDownLatch(1)
    val pool = Executors.newFixedThreadPool(writers + 2)
    // The continuous reader: waits for the frontier, reads what it passed, commits.
    val tailGot = ArrayBuffer.empty[Pair]
    val writersDone = new CountDownLatch(writers)
    pool.submit(new Runnable {
      def run(): Unit =
        try {
          start.await()
          var done = EventTime.MinusInfinity
          while (writersDone.getCount > 0 || done < s.updateProgress) {
            val until = tail.awaitBeyond(done, 20)
            if (until > done) {
              tailGot ++= tail.changes(done, until).map(pairOf)
              tail.commit(until)
              done = until
            }
          }
        } catch { case e: Throwable => failure.compareAndSet(null, e) }
    })
    // A subscription opened while commits run, from earliest: its seam lands wherever U is then.
    val lateJoin = new AtomicReference[ChangeSubscription]()
    pool.submit(new Runnable {
      def run(): Unit =
        try { start.await(); Thread.sleep(30); lateJoin.set(s.subscribeChanges(EventTime.MinusInfinity)) }
        catch { case e: Throwable => failure.compareAndSet(null, e) }
    })
    for (w <- 0 until writers) pool.submit(new Runnable {
      def run(): Unit =
        try {
          val rnd = new Random(100 + w)
          start.await()
          var progress = 0L
          for (e <- 0 until rounds) {
            val b = new UpdateBatch
            val base = math.max(progress, s.updateProgress)
            for (i <- 0 until rnd.nextInt(60)) {
              // Keys are per writer and time, so (key, time) pairs are distinct across writers.
              val p = Pair(s"w$w-k${rnd.nextInt(40)}", base + 100 + i * 7 + rnd.nextInt(5), s"w$w-e$e")
              b.add(p.key.getBytes("UTF-8"), p.time, p.value.getBytes("UTF-8"))
            }
            // Two tasks; a key's pairs are in one task, so arrival order does not matter (times are distinct).
            s.stage(s"w$w", e, 0, b)
            progress = base + rnd.nextInt(50)
            val out = s.commitEpoch(s"w$w", e, progress)
            assert(out.rejected == 0)
            var i = 0
            while (i < b.size) {
              accepted.add(Pair(new String(b.keyAt(i), "UTF-8"), b.timeAt(i), new String(b.valueAt(i), "UTF-8")));
              i += 1
            }
          }
          s.finishWriter(s"w$w")
        } catch { case e: Throwable => failure.compareAndSet(null, e) }
        finally writersDone.countDown()
    })
    start.countDown()
    assert(writersDone.await(120, TimeUnit.SECONDS), "writers finished (a commit never waits for a reader)")
    pool.shutdown()
    assert(pool.awaitTermination(60, TimeUnit.SECONDS), "the continuous reader caught up")
    if (failure.get != null) throw failure.get
    val u = s.updateProgress
    assert(u == EventTime.PlusInfinity, "every writer finished")
    assert(s.changeFeed.roomCounts._1 > 0, "the committer drained readers instead of waiting")
    import scala.jdk.CollectionConverters._
    // Keep only distinct (key, time): a later epoch of the same writer may have rewritten a pair (replace).
    val finalPairs = accepted.asScala.groupBy(p => (p.key, p.time)).values.map(_.last)
    val expected = oracleOrder(finalPairs)
    assert(tailGot.size == expected.size)
    assert(tailGot == expected)
    assert(idle.changes(EventTime.MinusInfinity, u).map(pairOf).toSeq == expected)
    assert(lateJoin.get.changes(EventTime.MinusInfinity, u).map(pairOf).toSeq == expected)
  }
}

object ChangeFeedSuite {

  /** A change as the oracle sees it. */
  final case class Pair(key: String, time: Long, value: String)
}
