package io.sharedstate.core

import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks
import scala.util.Random

/**
 * A key's chain is applied in (timestamp, arrival) order: StatePartition.byTime sorts a chain of
 * staged positions by time, keeping arrival order among equal times, as primitives when the chain's
 * time span fits beside its length, boxed otherwise. Both against a stable sort of the positions.
 */
class ChainOrderSuite extends AnyFunSuite with ScalaCheckPropertyChecks {

  test("byTime is a stable sort by time, narrow and wide time spans, few and many equal times") {
    forAll(Gen.choose(Long.MinValue, Long.MaxValue)) { seed =>
      val rnd = new Random(seed)
      val size = 1 + rnd.nextInt(if (rnd.nextBoolean()) 20 else 5000)
      val times = new Array[Long](size + 10)
      val spread = rnd.nextInt(4) match {
        case 0 => 3L // many equal times
        case 1 => 1000000L
        case 2 => Long.MaxValue / 4 // too wide to pack: the boxed sort
        case _ => Long.MaxValue // spans that overflow a long
      }
      times.indices.foreach(i => times(i) = rnd.nextLong() % spread)
      val chain = rnd.shuffle((0 until times.length).toVector).take(size).toArray // positions, in arrival order
      val want = chain.zipWithIndex.sortBy { case (c, arrival) => (times(c), arrival) }.map(_._1)
      assert(StatePartition.byTime(chain, times).toSeq == want.toSeq)
    }
  }
}
