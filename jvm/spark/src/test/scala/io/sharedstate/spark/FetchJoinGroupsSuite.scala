package io.sharedstate.spark

import io.sharedstate.core.EventTime
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/** A U step's tick rows must visit the ring slot of every reply time it passes, and few others. */
class FetchJoinGroupsSuite extends AnyFunSuite {
  import FetchJoinGroups._

  test("a step [from, until) visits the slot of every reply time in it, and only slots it touches") {
    val rnd = new Random(7)
    for (_ <- 0 until 20000) {
      // times near and far from 0, both signs; |from| and step below 2^61, so until - from cannot overflow
      val from = rnd.nextLong() >> (2 + rnd.nextInt(40))
      val step = if (rnd.nextBoolean()) rnd.nextInt(3 * SlotMicros.toInt).toLong else (rnd.nextLong() >>> (2 + rnd.nextInt(50)))
      val until = from + step
      val passed = ringsPassed(from, until).toSet
      if (until <= from) assert(passed.isEmpty)
      else {
        for (_ <- 0 until 20) {
          val r = from + java.lang.Long.remainderUnsigned(rnd.nextLong(), until - from)
          assert(passed(ring(r)), s"reply $r in [$from, $until) has slot ${ring(r)}, not in $passed")
        }
        assert(passed(ring(from)) && passed(ring(until - 1)))
        val touched = Math.floorDiv(until - 1, SlotMicros) - Math.floorDiv(from, SlotMicros) + 1
        assert(passed.size == math.min(touched, RingSlots.toLong))
      }
    }
  }

  test("the first step (from -infinity) and a step of a whole ring visit every slot") {
    assert(ringsPassed(EventTime.MinusInfinity, 5L).toSet == (0 until RingSlots).toSet)
    assert(ringsPassed(0L, RingSlots * SlotMicros).toSet == (0 until RingSlots).toSet)
    assert(ringsPassed(0L, RingSlots * SlotMicros - 1).size == RingSlots)
    assert(ringsPassed(1L, 2L).toList == List(ring(1L)))
  }

  test("reply times before 1970 and at the extremes fall in the ring") {
    for (t <- Seq(Long.MinValue, -1L, 0L, SlotMicros - 1, SlotMicros, Long.MaxValue)) {
      val s = ring(t)
      assert(s >= 0 && s < RingSlots, s"$t -> $s")
    }
    assert(ring(-1L) == RingSlots - 1)
  }

  test("(bucket, ring slot) pairs have distinct groups, also with no time") {
    for (buckets <- Seq(1, 7, 1024)) {
      val pairs = for (b <- 0 until buckets; r <- NoTime +: (0 until RingSlots)) yield (b, r)
      val groups = pairs.map { case (b, r) => group(b, r, buckets) }
      assert(groups.distinct.size == pairs.size)
      assert(pairs.zip(groups).forall { case ((_, r), g) => (r == NoTime) == (g < 0) })
    }
  }
}
