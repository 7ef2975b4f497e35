package io.sharedstate.core.txn

import io.sharedstate.core.StateSpec
import scala.util.Random

/**
 * Random transactions and plain updates over three States with different rules (sum, replace, max):
 * skewed keys, 0-3 reads and 0-3 writes over any of the States (read-modify-writes, transfers between
 * States, blind writes, read-only), deletes, aborts, logic that throws or commits a bad decision, many
 * equal times (ties), arrival far out of time order.
 */
final class RandomMixWorkload(n: Int, keys: Int) extends TxnWorkload {
  val name = "mix"
  val states: Seq[StateSpec] = Seq(
    StateSpec("mix_a", "k BIGINT", "v BIGINT", 2, "sum"),
    StateSpec("mix_b", "k BIGINT", "v BIGINT", 1, "replace"),
    StateSpec("mix_c", "k BIGINT", "v BIGINT", 3, "max")
  )

  def events(seed: Long): IndexedSeq[TxnEvent] = {
    val rnd = new Random(seed)
    def key(): StateKey = {
      val s = states(rnd.nextInt(states.length)).name
      TxnRows.key(s, (math.pow(rnd.nextDouble(), 3) * keys).toLong) // skewed towards key 0
    }
    IndexedSeq.tabulate(n) { i =>
      val time = math.max(0L, (i * 10L + rnd.nextInt(600) - 300) / 20) // out of order, with ties
      if (rnd.nextInt(10) < 3) {
        val k = key()
        TxnEvent.Plain(k.state, k.key.bytes, time, TxnRows.long(rnd.nextInt(100) - 20))
      } else {
        val reads = IndexedSeq.fill(rnd.nextInt(4))(key())
        // Often writes what it reads (read-modify-write), sometimes other keys (a transfer).
        val writes = IndexedSeq.fill(rnd.nextInt(4))(
          if (reads.nonEmpty && rnd.nextBoolean()) reads(rnd.nextInt(reads.length)) else key())
        val logic = MixLogic(
          add = rnd.nextInt(50),
          abortMod = rnd.nextInt(7),
          deleteMask = rnd.nextInt(16) & rnd.nextInt(16),
          keepMask = rnd.nextInt(16) & rnd.nextInt(16),
          throwMod = if (rnd.nextInt(10) == 0) rnd.nextInt(3) else -1,
          bad = rnd.nextInt(40) == 0
        )
        TxnEvent.Txn(new Transaction(time, reads, writes, logic, TxnRows.long(i.toLong)))
      }
    }
  }
}

/** Sums what it read; aborts, throws, deletes or keeps according to its parameters; else puts sum + add + j. */
final case class MixLogic(add: Int, abortMod: Int, deleteMask: Int, keepMask: Int, throwMod: Int, bad: Boolean)
    extends TransactionLogic {
  def decide(txn: Transaction, reads: IndexedSeq[Option[Array[Byte]]]): TransactionDecision = {
    val sum = reads.map(TxnRows.orZero).sum
    if (throwMod >= 0 && Math.floorMod(sum, 3L) == throwMod) throw new IllegalStateException(s"boom at $sum")
    if (Math.floorMod(sum + add, 7L) == abortMod) TransactionDecision.Abort(s"sum $sum")
    else if (bad) TransactionDecision.Commit(IndexedSeq(WriteValue.Keep) ++ txn.writes.map(_ => WriteValue.Keep))
    else TransactionDecision.Commit(txn.writes.indices.map { j =>
      if ((deleteMask >> j & 1) == 1) WriteValue.Delete
      else if ((keepMask >> j & 1) == 1) WriteValue.Keep
      else WriteValue.Put(TxnRows.long(sum + add + j))
    })
  }
}
