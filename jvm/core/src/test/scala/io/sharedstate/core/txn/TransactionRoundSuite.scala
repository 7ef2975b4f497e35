package io.sharedstate.core.txn

import io.sharedstate.core.txn.apps.StreamingLedger
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/** The round's ranking: the primitive-sort path against the (time, id) comparison it replaces. */
class TransactionRoundSuite extends AnyFunSuite {

  private def txn(time: Long): Transaction =
    new Transaction(time, IndexedSeq.empty, IndexedSeq.empty, StreamingLedger.Deposit(1, 1))

  private def byComparison(txns: IndexedSeq[(TransactionId, Transaction)]): IndexedSeq[Int] =
    txns.indices.sortWith { (a, b) =>
      val c = java.lang.Long.compare(txns(a)._2.time, txns(b)._2.time)
      if (c != 0) c < 0 else txns(a)._1.compare(txns(b)._1) < 0
    }

  test("packedOrder is the (time, id) order whenever it answers, and answers for ids in order over a small span") {
    val rnd = new Random(7)
    var packed = 0
    (1 to 600).foreach { round =>
      val n = rnd.nextInt(700)
      val span = round % 4 match {
        case 0 => 3L // many ties
        case 1 => 1000L
        case 2 => 1L << 50 // too wide for n > 2^13
        case _ => Long.MaxValue // times anywhere, extremes included
      }
      val times = IndexedSeq.fill(n)(
        if (span == Long.MaxValue) rnd.nextInt(3) match {
          case 0 => Long.MinValue + rnd.nextInt(5); case 1 => Long.MaxValue - rnd.nextInt(5); case _ => rnd.nextLong()
        }
        else -500L + (rnd.nextLong() & Long.MaxValue) % span)
      // Ids in order (one writer's epochs and tasks), or shuffled, or from several writers.
      val ids = IndexedSeq.tabulate(n)(i => TransactionId(s"w${i / 97}", (i / 50).toLong, i / 7, i))
      val inOrder = rnd.nextBoolean()
      val txns = (if (inOrder) ids else rnd.shuffle(ids)).zip(times.map(txn))
      val order = TransactionRound.packedOrder(txns)
      val smallSpan = n < 2 || (times.max - times.min >= 0 && times.max - times.min < (1L << 40))
      if (order != null) {
        packed += 1
        assert(order.toIndexedSeq == byComparison(txns), s"round $round")
      }
      if (inOrder && smallSpan) assert(order != null, s"round $round: ids in order over a small span")
      if (!inOrder && n > 2 && order != null) assert(txns.map(_._1) == txns.map(_._1).sorted, s"round $round")
    }
    assert(packed > 200, s"only $packed rounds took the primitive sort")
  }
}
