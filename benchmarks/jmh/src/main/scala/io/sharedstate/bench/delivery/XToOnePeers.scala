package io.sharedstate.bench.delivery

import com.lmax.disruptor.{EventPoller, RingBuffer, YieldingWaitStrategy}
import io.sharedstate.delivery.Inbox
import org.jctools.queues.MpscArrayQueue

import java.util.concurrent.ArrayBlockingQueue

/**
 * Nova section 5.4's X:1 test: X writer threads send 8-byte messages (a reference, like Nova's
 * message pointer) to one reader. Nova gets one 65,536-slot queue per writer; the shared-queue peers
 * get one queue of 65,536 * X slots, as in the paper. A full queue or an empty poll yields, in all.
 */
sealed trait XToOnePeer {

  /** Runs `writers` threads of `perWriter` sends each; the calling thread reads them all. */
  def run(writers: Int, perWriter: Int): Long
}

object XToOnePeer {
  val LaneSlots = 65536
  val Message: java.lang.Long = java.lang.Long.valueOf(8L)

  def apply(name: String, writers: Int): XToOnePeer = name match {
    case "nova" => new NovaLanes(writers)
    case "jctoolsMpsc" => new JctoolsMpsc(writers)
    case "disruptor" => new Disruptor(writers)
    case "arrayBlockingQueue" => new ArrayBlocking(writers)
    case other => throw new IllegalArgumentException(
        s"impl must be nova, jctoolsMpsc, disruptor or arrayBlockingQueue, got $other")
  }

  def writerThreads(n: Int)(body: Int => Unit): Seq[Thread] =
    (0 until n).map { i =>
      val t = new Thread(() => body(i)); t.start(); t
    }
}

final class NovaLanes(writers: Int) extends XToOnePeer {
  private val inbox =
    new Inbox[java.lang.Long](maxWriters = writers, maxRepliers = 0, laneCapacity = XToOnePeer.LaneSlots)

  def run(writers: Int, perWriter: Int): Long = {
    val threads = XToOnePeer.writerThreads(writers) { w =>
      val lane = inbox.inputLane(w)
      var i = 0
      while (i < perWriter) { if (lane.trySend(XToOnePeer.Message)) i += 1 else Thread.`yield`() }
    }
    var got = 0L
    val total = writers.toLong * perWriter
    while (got < total) { if (inbox.poll() != null) got += 1 else Thread.`yield`() }
    threads.foreach(_.join())
    got
  }
}

final class JctoolsMpsc(writers: Int) extends XToOnePeer {
  private val queue = new MpscArrayQueue[java.lang.Long](XToOnePeer.LaneSlots * writers)

  def run(writers: Int, perWriter: Int): Long = {
    val threads = XToOnePeer.writerThreads(writers) { _ =>
      var i = 0
      while (i < perWriter) { if (queue.offer(XToOnePeer.Message)) i += 1 else Thread.`yield`() }
    }
    var got = 0L
    val total = writers.toLong * perWriter
    while (got < total) { if (queue.poll() != null) got += 1 else Thread.`yield`() }
    threads.foreach(_.join())
    got
  }
}

final class Disruptor(writers: Int) extends XToOnePeer {
  final class Slot { var value: java.lang.Long = _ }
  private val ring = RingBuffer.createMultiProducer[Slot](() => new Slot, XToOnePeer.LaneSlots * writers,
    new YieldingWaitStrategy)
  private val poller: EventPoller[Slot] = ring.newPoller()
  ring.addGatingSequences(poller.getSequence)
  private var got = 0L
  private val handler: EventPoller.Handler[Slot] = (s: Slot, _: Long, _: Boolean) => {
    if (s.value != null) got += 1
    true
  }

  def run(writers: Int, perWriter: Int): Long = {
    val threads = XToOnePeer.writerThreads(writers) { _ =>
      var i = 0
      while (i < perWriter) {
        val seq = ring.next() // waits (parks briefly) while the ring is full
        ring.get(seq).value = XToOnePeer.Message
        ring.publish(seq)
        i += 1
      }
    }
    got = 0L
    val total = writers.toLong * perWriter
    while (got < total) {
      if (poller.poll(handler) != EventPoller.PollState.PROCESSING) Thread.`yield`()
    }
    threads.foreach(_.join())
    got
  }
}

final class ArrayBlocking(writers: Int) extends XToOnePeer {
  private val queue = new ArrayBlockingQueue[java.lang.Long](XToOnePeer.LaneSlots * writers)

  def run(writers: Int, perWriter: Int): Long = {
    val threads = XToOnePeer.writerThreads(writers) { _ =>
      var i = 0
      while (i < perWriter) { queue.put(XToOnePeer.Message); i += 1 }
    }
    var got = 0L
    val total = writers.toLong * perWriter
    while (got < total) { queue.take(); got += 1 }
    threads.foreach(_.join())
    got
  }
}
