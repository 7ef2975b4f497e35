package io.sharedstate.core.txn.apps

import io.sharedstate.core.StateSpec
import io.sharedstate.core.row.{BinaryRow, BinaryRowWriter}
import io.sharedstate.core.txn._
import scala.util.Random

/**
 * Online Bidding (TStream OB): one table of `records` items (price, quantity), an absent item reading
 * as price 100 + key mod 50, quantity 1000. bid:alter:top = 6:1:1. A bid (length 1) takes its quantity
 * if its price is at least the asking price and enough is left, else aborts; alter (length 20) sets
 * new prices of 20 items; top (length 20) adds to their quantities. Zipf 0.6, 25% multi-partition of
 * length 4.
 */
final class OnlineBidding(events: Int, records: Int = 10000, skew: Double = 0.6) extends TxnWorkload {
  import OnlineBidding._
  val name = "ob"
  val states: Seq[StateSpec] = Seq(StateSpec(Items, "k BIGINT", "price BIGINT, qty BIGINT", 4, "replace"))
  private val picker = new KeyPicker(records, skew)

  def events(seed: Long): IndexedSeq[TxnEvent] = {
    val rnd = new Random(seed)
    IndexedSeq.tabulate(events) { i =>
      val time = AppTime.of(i, rnd)
      val kind = rnd.nextInt(8)
      val txn =
        if (kind < 6) {
          val k = IndexedSeq(TxnRows.key(Items, picker.zipf(rnd).toLong))
          new Transaction(time, k, k, Bid(90L + rnd.nextInt(70), 1L + rnd.nextInt(30)))
        } else {
          val ks = picker.keys(rnd, Length).map(TxnRows.key(Items, _))
          val logic = if (kind == 6) Alter(IndexedSeq.fill(Length)(80L + rnd.nextInt(80)))
          else Top(IndexedSeq.fill(Length)(1L + rnd.nextInt(50)))
          new Transaction(time, ks, ks, logic)
        }
      TxnEvent.Txn(txn)
    }
  }
}

object OnlineBidding {
  val Items = "ob_items"
  val Length = 20
  private val reader = new BinaryRow(2)

  def item(price: Long, qty: Long): Array[Byte] = {
    val w = new BinaryRowWriter(2)
    w.setLong(0, price); w.setLong(1, qty)
    w.toBytes
  }

  /** (price, quantity) of an item as read, its initial values when absent. */
  def read(key: StateKey, v: Option[Array[Byte]]): (Long, Long) = v match {
    case Some(row) => (reader.getLong(row, 0, 0), reader.getLong(row, 0, 1))
    case None => (100L + Math.floorMod(TxnRows.readLong(key.key.bytes), 50L), 1000L)
  }

  final case class Bid(price: Long, qty: Long) extends TransactionLogic {
    def decide(txn: Transaction, reads: IndexedSeq[Option[Array[Byte]]]): TransactionDecision = {
      val (ask, left) = read(txn.reads(0), reads(0))
      if (price < ask || left < qty) TransactionDecision.Abort("rejected bid")
      else TransactionDecision.commit(WriteValue.Put(item(ask, left - qty)))
    }
  }

  final case class Alter(prices: IndexedSeq[Long]) extends TransactionLogic {
    def decide(txn: Transaction, reads: IndexedSeq[Option[Array[Byte]]]): TransactionDecision =
      TransactionDecision.Commit(
        reads.indices.map(j => WriteValue.Put(item(prices(j), read(txn.reads(j), reads(j))._2))))
  }

  final case class Top(adds: IndexedSeq[Long]) extends TransactionLogic {
    def decide(txn: Transaction, reads: IndexedSeq[Option[Array[Byte]]]): TransactionDecision =
      TransactionDecision.Commit(reads.indices.map { j =>
        val (p, q) = read(txn.reads(j), reads(j))
        WriteValue.Put(item(p, q + adds(j)))
      })
  }
}
