package io.sharedstate.core.txn

import io.sharedstate.core.UpdateOrigin

/**
 * One operation of a per-key chain, ordered by (time, class, sequence, kind, index): at one time a
 * key's plain updates come first (class 0, in arrival order), then transactions (class 1, in id order,
 * `sequence` = the transaction's rank), and within one transaction its reads of the key before its
 * writes of it.
 */
private[sharedstate] sealed abstract class ChainOp(val time: Long, val cls: Int, val sequence: Long, val kind: Int,
    val index: Int)

private[sharedstate] object ChainOp {

  /** A plain staged update, applied with the State's update rule. */
  final class Plain(time: Long, arrival: Long, val value: Array[Byte], val origin: UpdateOrigin)
      extends ChainOp(time, 0, arrival, 0, 0)

  /** Read `index` of `run`'s read set. */
  final class Read(val run: TransactionRun, index: Int) extends ChainOp(run.time, 1, run.rank.toLong, 0, index)

  /** Write `index` of `run`'s write set: waits for the transaction's decision. */
  final class Write(val run: TransactionRun, index: Int) extends ChainOp(run.time, 1, run.rank.toLong, 1, index)

  /**
   * A pair a transaction put, replayed from the journal (see [[TransactionRound.replay]]): ordered like
   * the transaction's write it was, `sequence` = its position in the journaled round.
   */
  final class Put(time: Long, sequence: Long, val value: Array[Byte]) extends ChainOp(time, 1, sequence, 1, 0)

  val Order: java.util.Comparator[ChainOp] = (a: ChainOp, b: ChainOp) => {
    var c = java.lang.Long.compare(a.time, b.time)
    if (c == 0) c = Integer.compare(a.cls, b.cls)
    if (c == 0) c = java.lang.Long.compare(a.sequence, b.sequence)
    if (c == 0) c = Integer.compare(a.kind, b.kind)
    if (c == 0) c = Integer.compare(a.index, b.index)
    c
  }
}
