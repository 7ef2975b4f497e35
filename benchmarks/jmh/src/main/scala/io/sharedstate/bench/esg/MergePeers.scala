package io.sharedstate.bench.esg

import io.sharedstate.core.esg.ElasticScaleGate
import org.jctools.queues.SpscArrayQueue

import java.util.concurrent.atomic.{AtomicIntegerArray, AtomicLongArray}
import java.util.concurrent.{ArrayBlockingQueue, PriorityBlockingQueue}
import java.util.Comparator

/** A tuple of the peers: the ESG allocates its own node per add, so the peers allocate one too. */
final class Item(val ts: Long, val source: Int)

/**
 * Three ways to merge S timestamp-sorted sources and deliver every tuple to each of R readers in one
 * timestamp order, holding a tuple back until every source has passed its time (the ESG's readiness).
 * Each run moves `total` tuples and returns the readers' checksum. Idle threads yield, in all three.
 */
sealed trait MergePeer {
  def run(sources: Int, readers: Int, total: Int): Long
}

object MergePeer {
  val Capacity = 4096
  val End = Long.MaxValue

  def apply(name: String): MergePeer = name match {
    case "esg" => EsgMerge
    case "pbqMerge" => PriorityQueueMerge
    case "perSourceMerge" => PerSourceQueuesMerge
    case other => throw new IllegalArgumentException(s"impl must be esg, pbqMerge or perSourceMerge, got $other")
  }

  /** Runs `body(i)` for i in 0 until n in n fresh threads, plus `main` in this thread; joins all. */
  def inThreads(n: Int)(body: Int => Unit): Seq[Thread] =
    (0 until n).map { i =>
      val t = new Thread(() => body(i)); t.start(); t
    }

  def idle(): Unit = Thread.`yield`()
}

/** The ESG: sources add, readers get; no thread in between. */
object EsgMerge extends MergePeer {
  def run(sources: Int, readers: Int, total: Int): Long = {
    val esg = ElasticScaleGate[AnyRef](sources, readers, capacityPerSource = MergePeer.Capacity, startTime = 0)
    val perSource = total / sources
    val sums = new AtomicLongArray(readers)
    val threads = MergePeer.inThreads(sources) { s =>
      var i = 0
      while (i < perSource) { esg.add(i.toLong, Payload, s); i += 1 }
      esg.heartbeat(MergePeer.End, s)
    } ++ MergePeer.inThreads(readers) { r =>
      var got = 0
      var sum = 0L
      while (got < perSource * sources) {
        val t = esg.get(r)
        if (t == null) MergePeer.idle() else if (!t.isWatermark) { got += 1; sum += t.timestamp }
      }
      sums.set(r, sum)
    }
    threads.foreach(_.join())
    (0 until readers).map(sums.get).sum
  }

  private val Payload = new Object
}

/** A lock-based merge: sources put into one PriorityBlockingQueue; one merger hands ready tuples on. */
object PriorityQueueMerge extends MergePeer {
  private val order: Comparator[Item] = (a: Item, b: Item) =>
    if (a.ts != b.ts) java.lang.Long.compare(a.ts, b.ts) else Integer.compare(a.source, b.source)

  def run(sources: Int, readers: Int, total: Int): Long = {
    val queue = new PriorityBlockingQueue[Item](MergePeer.Capacity * sources, order)
    val last = new AtomicLongArray(sources) // each source's latest timestamp: the readiness bound
    // Bounded per source, like the ESG: a global bound would deadlock when the source that holds the
    // merge back cannot put because a faster one filled the queue.
    val pending = new AtomicIntegerArray(sources)
    val outs = Array.fill(readers)(new ArrayBlockingQueue[Item](MergePeer.Capacity))
    val perSource = total / sources
    val sums = new AtomicLongArray(readers)
    val producers = MergePeer.inThreads(sources) { s =>
      var i = 0
      while (i < perSource) {
        while (pending.get(s) >= MergePeer.Capacity) MergePeer.idle()
        pending.incrementAndGet(s)
        queue.put(new Item(i.toLong, s))
        last.set(s, i.toLong)
        i += 1
      }
      last.set(s, MergePeer.End)
    }
    val merger = MergePeer.inThreads(1) { _ =>
      var moved = 0
      while (moved < perSource * sources) {
        val head = queue.peek()
        var min = Long.MaxValue
        var s = 0
        while (s < sources) { min = math.min(min, last.get(s)); s += 1 }
        if (head != null && head.ts <= min) {
          val t = queue.poll()
          pending.decrementAndGet(t.source)
          var r = 0
          while (r < readers) { outs(r).put(t); r += 1 }
          moved += 1
        } else MergePeer.idle()
      }
    }
    val consumers = MergePeer.inThreads(readers) { r =>
      var sum = 0L
      var got = 0
      while (got < perSource * sources) { sum += outs(r).take().ts; got += 1 }
      sums.set(r, sum)
    }
    (producers ++ merger ++ consumers).foreach(_.join())
    (0 until readers).map(sums.get).sum
  }
}

/** Per-source lock-free SPSC queues (JCTools), k-way merged by one thread into per-reader SPSC queues. */
object PerSourceQueuesMerge extends MergePeer {
  private val EndItem = new Item(MergePeer.End, -1)

  def run(sources: Int, readers: Int, total: Int): Long = {
    val ins = Array.fill(sources)(new SpscArrayQueue[Item](MergePeer.Capacity))
    val outs = Array.fill(readers)(new SpscArrayQueue[Item](MergePeer.Capacity))
    val perSource = total / sources
    val sums = new AtomicLongArray(readers)
    val producers = MergePeer.inThreads(sources) { s =>
      var i = 0
      while (i < perSource) { val t = new Item(i.toLong, s); while (!ins(s).offer(t)) MergePeer.idle(); i += 1 }
      while (!ins(s).offer(EndItem)) MergePeer.idle()
    }
    val merger = MergePeer.inThreads(1) { _ =>
      val heads = new Array[Item](sources)
      var done = false
      while (!done) {
        var s = 0
        var missing = false
        while (s < sources) {
          if (heads(s) == null) heads(s) = ins(s).poll()
          if (heads(s) == null) missing = true
          s += 1
        }
        if (missing) MergePeer.idle() // some source has not passed the others yet: not ready
        else {
          var best = 0
          s = 1
          while (s < sources) { if (heads(s).ts < heads(best).ts) best = s; s += 1 }
          val t = heads(best)
          if (t eq EndItem) done = true
          else {
            heads(best) = null
            var r = 0
            while (r < readers) { while (!outs(r).offer(t)) MergePeer.idle(); r += 1 }
          }
        }
      }
    }
    val consumers = MergePeer.inThreads(readers) { r =>
      var sum = 0L
      var got = 0
      while (got < perSource * sources) {
        val t = outs(r).poll()
        if (t == null) MergePeer.idle() else { sum += t.ts; got += 1 }
      }
      sums.set(r, sum)
    }
    (producers ++ merger ++ consumers).foreach(_.join())
    (0 until readers).map(sums.get).sum
  }
}
