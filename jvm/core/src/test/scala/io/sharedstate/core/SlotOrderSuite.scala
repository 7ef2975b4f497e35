package io.sharedstate.core

import org.scalatest.funsuite.AnyFunSuite

/**
 * The apply round's order: the radix sort against a stable comparison sort (the oracle), and the
 * order it gives walking a key table's slots from start to end with equal keys adjacent in arrival
 * order.
 */
class SlotOrderSuite extends AnyFunSuite {

  test("the radix sort orders entries as a stable unsigned sort of their ranks does") {
    val rnd = new scala.util.Random(7)
    for (n <- Seq(0, 1, 2, 63, 64, 65, 1000, 50000); narrow <- Seq(true, false)) {
      // Narrow ranks repeat a lot (ties must keep index order); wide ones use all 32 bits, sign bit included.
      val ranks = Array.fill(n)(if (narrow) rnd.nextInt(16) << 28 | rnd.nextInt(3) else rnd.nextInt())
      val order = Array.tabulate(n)(i => (ranks(i).toLong << 32) | i)
      val expected = order.indices.sortWith { (a, b) =>
        val c = Integer.compareUnsigned(ranks(a), ranks(b))
        c < 0 || (c == 0 && a < b)
      }
      SlotOrder.sort(order)
      assert(order.map(SlotOrder.indexOf).toSeq == expected, s"n=$n narrow=$narrow")
    }
  }

  test("sorted entries walk the key table's slots in order, equal keys adjacent in arrival order, hashes recoverable") {
    val rnd = new scala.util.Random(11)
    val keys = Array.tabulate(500)(i => new Key(s"key-$i".getBytes))
    val arrivals = Array.fill(3000)(keys(rnd.nextInt(keys.length)))
    for (capacity <- Seq(2, 16, 1024, 1 << 20)) {
      val order = arrivals.indices.map(i => SlotOrder.entry(arrivals(i).hashCode, capacity, i)).toArray
      SlotOrder.sort(order)
      val idx = order.map(SlotOrder.indexOf)
      assert(order.forall(e => SlotOrder.hashOf(e, capacity) == arrivals(SlotOrder.indexOf(e)).hashCode))
      val slots = idx.map(i => KeyTable.slotOf(arrivals(i).hashCode, capacity))
      assert(slots.toSeq == slots.toSeq.sorted, s"capacity $capacity")
      // Every key's arrivals form one run (no two keys share a hash here), in arrival order.
      val runs = idx.toSeq.map(arrivals(_)).zipWithIndex.groupBy(_._1).values
      runs.foreach { r =>
        val at = r.map(_._2).sorted
        assert(at.last - at.head == at.length - 1, s"capacity $capacity: a key's updates are not adjacent")
      }
      arrivals.indices.groupBy(arrivals(_)).foreach { case (k, is) =>
        assert(idx.filter(arrivals(_) == k).toSeq == is.sorted, s"capacity $capacity: arrival order lost")
      }
    }
  }
}
