package io.sharedstate.core.txn

import io.sharedstate.core.UpdateOrigin

/**
 * An operation of a per-key chain that is not a transaction's access: a plain staged update or a pair
 * replayed from the journal, ordered by (time, class, sequence): at one time a key's plain updates
 * first (class 0, in arrival order), then the replayed pairs (class 1, in journal order). A
 * transaction's accesses are not objects: a chain holds them encoded as longs ([[ChainOp.access]]),
 * in the round's (time, id) order, and walks both sequences merged (see [[OperationChain]]).
 */
private[sharedstate] sealed abstract class ChainOp(val time: Long, val cls: Int, val sequence: Long)

private[sharedstate] object ChainOp {

  /** A plain staged update, applied with the State's update rule. */
  final class Plain(time: Long, arrival: Long, val value: Array[Byte], val origin: UpdateOrigin)
      extends ChainOp(time, 0, arrival)

  /**
   * A pair a transaction put, replayed from the journal (see [[TransactionRound.replay]]): after the
   * plain updates of its time, `sequence` = its position in the journaled round.
   */
  final class Put(time: Long, sequence: Long, val value: Array[Byte]) extends ChainOp(time, 1, sequence)

  val Order: java.util.Comparator[ChainOp] = (a: ChainOp, b: ChainOp) => {
    var c = java.lang.Long.compare(a.time, b.time)
    if (c == 0) c = Integer.compare(a.cls, b.cls)
    if (c == 0) c = java.lang.Long.compare(a.sequence, b.sequence)
    c
  }

  private val WriteBit = 1L << 31

  /**
   * Access `index` of the transaction of rank `rank` in its round: a read (of its read set) or a write
   * (of its write set). A chain's accesses sorted as longs are in (rank, reads before writes, index)
   * order, the order the engine applies them in.
   */
  def access(rank: Int, write: Boolean, index: Int): Long =
    (rank.toLong << 32) | (if (write) WriteBit else 0L) | index.toLong

  def rankOf(access: Long): Int = (access >>> 32).toInt
  def isWrite(access: Long): Boolean = (access & WriteBit) != 0
  def indexOf(access: Long): Int = (access & (WriteBit - 1)).toInt
}
