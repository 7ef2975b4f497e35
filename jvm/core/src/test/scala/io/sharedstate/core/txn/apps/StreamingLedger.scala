package io.sharedstate.core.txn.apps

import io.sharedstate.core.StateSpec
import io.sharedstate.core.txn._
import scala.util.Random

/**
 * Streaming Ledger (TStream SL): accounts and assets, `records` each, every balance starting at
 * [[StreamingLedger.Initial]] (an absent key reads as it). Half the events deposit into an account and
 * an asset (length 2), half transfer between two (account, asset) pairs (length 4): the transfer reads
 * both sources and both destinations and commits only if both sources cover the amounts, else aborts.
 * The destination's write depends on the source's read: the cross-chain dependency. Zipf 0.6, 25%
 * multi-partition of length 4.
 */
final class StreamingLedger(events: Int, records: Int = 10000, skew: Double = 0.6) extends TxnWorkload {
  import StreamingLedger._
  val name = "sl"
  val states: Seq[StateSpec] = Seq(
    StateSpec(Accounts, "k BIGINT", "v BIGINT", 4, "replace"),
    StateSpec(Assets, "k BIGINT", "v BIGINT", 4, "replace"))
  private val picker = new KeyPicker(records, skew)

  def events(seed: Long): IndexedSeq[TxnEvent] = {
    val rnd = new Random(seed)
    IndexedSeq.tabulate(events) { i =>
      val time = AppTime.of(i, rnd)
      val txn =
        if (rnd.nextBoolean()) {
          val Seq(a, b) = picker.keys(rnd, 2)
          val ks = IndexedSeq(TxnRows.key(Accounts, a), TxnRows.key(Assets, b))
          new Transaction(time, ks, ks, Deposit(rnd.nextInt(100).toLong, rnd.nextInt(100).toLong))
        } else {
          val Seq(srcA, dstA, srcB, dstB) = picker.keys(rnd, 4)
          val ks = IndexedSeq(TxnRows.key(Accounts, srcA), TxnRows.key(Accounts, dstA), TxnRows.key(Assets, srcB),
            TxnRows.key(Assets, dstB))
          new Transaction(time, ks, ks,
            Transfer(rnd.nextInt(Initial.toInt / 2).toLong, rnd.nextInt(Initial.toInt / 2).toLong))
        }
      TxnEvent.Txn(txn)
    }
  }
}

object StreamingLedger {
  val Accounts = "sl_accounts"
  val Assets = "sl_assets"
  val Initial = 1000L

  def balance(v: Option[Array[Byte]]): Long = v.fold(Initial)(TxnRows.readLong)

  final case class Deposit(account: Long, asset: Long) extends TransactionLogic {
    def decide(txn: Transaction, reads: IndexedSeq[Option[Array[Byte]]]): TransactionDecision =
      TransactionDecision.commit(WriteValue.Put(TxnRows.long(balance(reads(0)) + account)),
        WriteValue.Put(TxnRows.long(balance(reads(1)) + asset)))
  }

  /** reads/writes: source account, destination account, source asset, destination asset. */
  final case class Transfer(account: Long, asset: Long) extends TransactionLogic {
    def decide(txn: Transaction, reads: IndexedSeq[Option[Array[Byte]]]): TransactionDecision = {
      val Seq(sa, da, sb, db) = reads.map(balance)
      if (sa < account || sb < asset) TransactionDecision.Abort("insufficient balance")
      else TransactionDecision.commit(
        WriteValue.Put(TxnRows.long(sa - account)),
        WriteValue.Put(TxnRows.long(da + account)),
        WriteValue.Put(TxnRows.long(sb - asset)),
        WriteValue.Put(TxnRows.long(db + asset))
      )
    }
  }
}
