package io.sharedstate.spark.write

import org.scalatest.funsuite.AnyFunSuite

class RealtimeLanesSuite extends AnyFunSuite {

  test("a lane is given back when its holder is interrupted while the reader drains it, the interrupt kept") {
    val lanes = RealtimeLanes.of("lanes_interrupted_drain")
    val lane = lanes.flushLane().getOrElse(fail("no flush lane free"))
    assert(lanes.flushLanesInUse == 1)
    // A stopped query interrupts its task while close() waits for the drain: the lane must not stay held.
    Thread.currentThread().interrupt()
    lanes.drainAndRelease(lane)
    assert(Thread.interrupted(), "the interrupt was swallowed")
    assert(lanes.flushLanesInUse == 0)
    // ... and it is free for the next holder
    val again = lanes.flushLane().getOrElse(fail("the lane was not given back"))
    lanes.drainAndRelease(again)
    assert(lanes.flushLanesInUse == 0 && !Thread.currentThread().isInterrupted)
  }
}
