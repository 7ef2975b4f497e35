package io.sharedstate.delivery

import io.sharedstate.core.esg.StressRuns
import org.scalatest.funsuite.AnyFunSuite

import java.util.concurrent.TimeUnit
import java.util.concurrent.locks.LockSupport

/**
 * X writers and some repliers send numbered messages with random pauses (so lanes go idle, get
 * unmarked and must be notified again) into small lanes (so writers also meet full rings). The
 * reader uses the parking `take`: a lost wake-up shows up as a timeout. The oracle: every writer's
 * messages arrive exactly once and in send order.
 */
class DeliveryStressSuite extends AnyFunSuite {
  private val writers = 4
  private val repliers = 2

  for (seed <- StressRuns.seeds) {
    test(s"every message arrives once, in per-writer order, with no lost wake-up (seed $seed)") {
      val perWriter = StressRuns.scaled(20000)
      val inbox = new Inbox[Array[Int]](writers, repliers, laneCapacity = 8, idleRounds = 2, burst = 4)
      def sender(id: Int, reply: Boolean): Thread = {
        val t = new Thread(() => {
          val lane = if (reply) inbox.replyLane(id) else inbox.inputLane(id)
          val rnd = new scala.util.Random(seed * 31 + id + (if (reply) 100 else 0))
          val count = if (reply) perWriter / 4 else perWriter
          for (i <- 0 until count) {
            lane.send(Array(if (reply) 1 else 0, id, i))
            if (rnd.nextInt(200) == 0) LockSupport.parkNanos(rnd.nextInt(200000).toLong) // go idle
          }
        })
        t.setDaemon(true)
        t.start()
        t
      }
      val threads = (0 until writers).map(sender(_, reply = false)) ++ (0 until repliers).map(sender(_, reply = true))
      val total = writers * perWriter + repliers * (perWriter / 4)
      val next = Array.ofDim[Int](2, writers max repliers)
      var received = 0
      while (received < total) {
        val m = inbox.take(30, TimeUnit.SECONDS)
        assert(m != null, s"no message for 30 s after $received of $total: a lost wake-up")
        val Array(kind, id, seq) = m
        assert(seq == next(kind)(id),
          s"${if (kind == 1) "replier" else "writer"} $id: got $seq, expected ${next(kind)(id)}")
        next(kind)(id) += 1
        received += 1
      }
      threads.foreach(_.join(10000))
      assert(inbox.poll() == null, "nothing beyond what was sent")
      assert(threads.forall(!_.isAlive))
    }
  }
}
