package io.sharedstate.delivery

import io.sharedstate.core.esg.StressRuns
import org.jetbrains.lincheck.datastructures.{IntGen, ModelCheckingOptions, Operation, Param}
import org.scalatest.funsuite.AnyFunSuite

import java.util

/**
 * Lincheck model checking of the ring and of the notification protocol against plain sequential
 * queues. With K = 1 the reader unmarks a lane after a single idle round, so the scenarios reach the
 * unmark/recheck race; a lost wake-up would leave a completed send unread by a later poll.
 */
class DeliveryLincheckSuite extends AnyFunSuite {
  private def options = new ModelCheckingOptions()
    .iterations(if (StressRuns.long) 200 else 8)
    .invocationsPerIteration(if (StressRuns.long) 5000 else 250)
    .threads(3)
    .actorsPerThread(3)

  test("the single-writer ring is a linearizable bounded FIFO") {
    options.threads(2).sequentialSpecification(classOf[BoundedQueueSpec]).check(classOf[SpscRingModel])
  }

  test("lanes with notification flags lose no message and deliver replies first") {
    options.sequentialSpecification(classOf[InboxSpec]).check(classOf[InboxModel])
  }
}

@Param(name = "v", gen = classOf[IntGen], conf = "1:9")
class SpscRingModel {
  private val ring = new SpscRing[Integer](2)

  @Operation(nonParallelGroup = "writer")
  def offer(@Param(name = "v") v: Int): Boolean = ring.offer(v)

  @Operation(nonParallelGroup = "reader")
  def poll(): Integer = ring.poll()
}

class BoundedQueueSpec {
  private val queue = new util.ArrayDeque[Integer]()

  def offer(v: Int): Boolean = queue.size < 2 && queue.add(v)

  def poll(): Integer = queue.poll()
}

@Param(name = "v", gen = classOf[IntGen], conf = "1:9")
class InboxModel {
  // Lanes never fill in these scenarios (the ring's full case is checked above): a reply that wins
  // over an input already taken holds that input outside the ring, one slot more than the ring.
  private val inbox = new Inbox[Integer](maxWriters = 1, maxRepliers = 1, laneCapacity = 16, idleRounds = 1)

  @Operation(nonParallelGroup = "writer")
  def send(@Param(name = "v") v: Int): Boolean = inbox.inputLane(0).trySend(v)

  @Operation(nonParallelGroup = "replier")
  def reply(@Param(name = "v") v: Int): Boolean = inbox.replyLane(0).trySend(-v)

  @Operation(nonParallelGroup = "reader")
  def poll(): Integer = inbox.poll()
}

class InboxSpec {
  private val input = new util.ArrayDeque[Integer]()
  private val replies = new util.ArrayDeque[Integer]()

  def send(v: Int): Boolean = input.size < 16 && input.add(v)

  def reply(v: Int): Boolean = replies.size < 16 && replies.add(-v)

  def poll(): Integer = if (!replies.isEmpty) replies.poll() else input.poll()
}
