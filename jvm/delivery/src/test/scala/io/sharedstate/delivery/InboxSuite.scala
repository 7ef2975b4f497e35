package io.sharedstate.delivery

import io.sharedstate.core.SharedStateException
import org.scalatest.funsuite.AnyFunSuite

import java.util.concurrent.TimeUnit

/** Single-threaded behaviour of the lanes and the reader's rounds. */
class InboxSuite extends AnyFunSuite {

  private def drain[M](inbox: Inbox[M]): Vector[M] =
    Iterator.continually(inbox.poll()).takeWhile(_ != null).toVector

  test("a ring is FIFO, wraps around, and refuses a message when full") {
    val ring = new SpscRing[Integer](4)
    assert((1 to 4).forall(i => ring.offer(i)))
    assert(!ring.offer(5))
    assert(ring.poll() == 1 && ring.poll() == 2)
    assert(ring.offer(5) && ring.offer(6))
    assert(ring.size() == 4)
    assert(Iterator.continually(ring.poll()).takeWhile(_ != null).toList == List(3, 4, 5, 6))
    assert(ring.isEmpty)
  }

  test("replies come before input, also when they arrive after the input") {
    val inbox = new Inbox[String](maxWriters = 2, maxRepliers = 2)
    inbox.inputLane(0).trySend("in-a")
    inbox.inputLane(0).trySend("in-b")
    inbox.replyLane(1).trySend("reply-1")
    assert(inbox.poll() == "reply-1")
    assert(inbox.poll() == "in-a")
    inbox.replyLane(0).trySend("reply-2")
    assert(inbox.poll() == "reply-2", "a reply visible before the next input is taken first")
    assert(drain(inbox) == Vector("in-b"))
  }

  test("a progress message on the updates' lane is read after every update sent before it") {
    val inbox = new Inbox[(String, Long)](maxWriters = 3, maxRepliers = 0, burst = 2)
    for (w <- 0 until 3; t <- 1L to 5L) inbox.inputLane(w).trySend((s"update-$w", t))
    for (w <- 0 until 3) inbox.inputLane(w).trySend((s"progress-$w", 6L))
    val out = drain(inbox)
    assert(out.size == 18)
    for (w <- 0 until 3) {
      val mine = out.filter(_._1.endsWith(s"-$w"))
      assert(mine.map(_._2) == (1L to 6L), s"writer $w's messages in send order")
      assert(mine.last._1 == s"progress-$w")
    }
  }

  test("a round reads each marked lane up to `burst` messages in a row") {
    val inbox = new Inbox[String](maxWriters = 2, maxRepliers = 0, burst = 2)
    for (i <- 1 to 4) { inbox.inputLane(0).trySend(s"a$i"); inbox.inputLane(1).trySend(s"b$i") }
    assert(drain(inbox) == Vector("a1", "a2", "b1", "b2", "a3", "a4", "b3", "b4"))
  }

  test("a lane idle for K rounds is unmarked, and a later send notifies the reader again") {
    val k = 3
    val inbox = new Inbox[String](maxWriters = 1, maxRepliers = 0, idleRounds = k)
    val lane = inbox.inputLane(0)
    assert(inbox.markedInputLanes == 0)
    lane.trySend("x")
    assert(inbox.poll() == "x")
    assert(inbox.markedInputLanes == 1, "a notified lane is read in rounds")
    lane.trySend("y") // the flag is still up: no notification needed
    assert(inbox.poll() == "y")
    for (_ <- 1 until k) assert(inbox.poll() == null)
    assert(inbox.markedInputLanes == 1, s"still marked after ${k - 1} idle rounds")
    assert(inbox.poll() == null)
    assert(inbox.markedInputLanes == 0, s"unmarked after $k idle rounds")
    lane.trySend("z")
    assert(inbox.take(1, TimeUnit.SECONDS) == "z", "the send after unmarking raised the flag again")
  }

  test("a full lane refuses trySend until the reader drains it") {
    val inbox = new Inbox[Integer](maxWriters = 1, maxRepliers = 0, laneCapacity = 2)
    val lane = inbox.inputLane(0)
    assert(lane.trySend(1) && lane.trySend(2))
    assert(!lane.trySend(3))
    assert(inbox.poll() == 1)
    assert(lane.trySend(3))
    assert(drain(inbox) == Vector(2, 3))
  }

  test("take times out with null when nothing arrives") {
    val inbox = new Inbox[String](maxWriters = 1, maxRepliers = 1)
    val start = System.nanoTime()
    assert(inbox.take(20, TimeUnit.MILLISECONDS) == null)
    assert(System.nanoTime() - start >= TimeUnit.MILLISECONDS.toNanos(20))
  }

  test("bad arguments are errors that name the argument and what is allowed") {
    def msg(f: => Any): String = intercept[SharedStateException](f).getMessage
    assert(msg(new Inbox[String](0, 1)).contains("maxWriters must be at least 1, got 0"))
    assert(msg(new Inbox[String](1, 1, laneCapacity = 100)).contains(
        "laneCapacity must be a power of two >= 2, got 100"))
    assert(msg(new Inbox[String](1, 1, idleRounds = 0)).contains("idleRounds must be at least 1, got 0"))
    assert(msg(new Inbox[String](2, 1).inputLane(2)).contains("input writer must be in [0, 2), got 2"))
    assert(msg(new Inbox[String](2, 1).replyLane(-1)).contains("reply writer must be in [0, 1), got -1"))
  }
}
