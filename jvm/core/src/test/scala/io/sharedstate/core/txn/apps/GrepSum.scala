package io.sharedstate.core.txn.apps

import io.sharedstate.core.StateSpec
import io.sharedstate.core.txn._
import scala.util.Random

/**
 * Grep and Sum (TStream GS): one table of `records` values; each event is a transaction over 10 keys:
 * half read them all (Sum: the outcome's reads are what Sum adds up), half write the event's value
 * to all of them. Zipf 0.6, 25% multi-partition of length 4.
 */
final class GrepSum(events: Int, records: Int = 10000, skew: Double = 0.6) extends TxnWorkload {
  val name = "gs"
  val table = "gs_table"
  val states: Seq[StateSpec] = Seq(StateSpec(table, "k BIGINT", "v BIGINT", 4, "replace"))
  private val picker = new KeyPicker(records, skew)

  def events(seed: Long): IndexedSeq[TxnEvent] = {
    val rnd = new Random(seed)
    IndexedSeq.tabulate(events) { i =>
      val keys = picker.keys(rnd, GrepSum.Length).map(TxnRows.key(table, _))
      val time = AppTime.of(i, rnd)
      val txn =
        if (rnd.nextBoolean()) new Transaction(time, keys, IndexedSeq.empty, GrepSum.Sum, null)
        else new Transaction(time, IndexedSeq.empty, keys, GrepSum.Write(rnd.nextInt(1000).toLong), null)
      TxnEvent.Txn(txn)
    }
  }
}

object GrepSum {
  val Length = 10

  /** Reads only: the sum is the post-processing of the outcome's reads. */
  object Sum extends TransactionLogic {
    def decide(txn: Transaction, reads: IndexedSeq[Option[Array[Byte]]]): TransactionDecision =
      TransactionDecision.Commit(IndexedSeq.empty)
  }

  final case class Write(value: Long) extends TransactionLogic {
    def decide(txn: Transaction, reads: IndexedSeq[Option[Array[Byte]]]): TransactionDecision =
      TransactionDecision.Commit(txn.writes.map(_ => WriteValue.Put(TxnRows.long(value))))
  }
}

/** Event times of the applications: arrival index halved (ties), up to 40 earlier (out of order). */
object AppTime {
  def of(i: Int, rnd: Random): Long = math.max(0L, (i - rnd.nextInt(40)) / 2L)
}
