package io.sharedstate.core.txn

import io.sharedstate.core.{Key, RejectedUpdate, SharedStateException, StatePartition, ValueSet}
import scala.collection.mutable.ArrayBuffer

/**
 * The operations of one batch on one key of one State, sorted by [[ChainOp.Order]], walked by one
 * thread at a time: plain updates fold the State's rule, reads resolve a transaction's read, writes
 * install a decided transaction's value. A write whose transaction is not decided yet parks the chain
 * ([[TransactionRun.park]]); the decider resumes it, maybe on another thread (the park's
 * compare-and-set and the decider's swap order the chain's fields between the two threads).
 *
 * At the end the new value set is published like the State's own chains publish: a compare-and-set
 * against the entry it started from, and if a compaction replaced that entry meanwhile, the chain's
 * pairs (kept in `puts`, all at or above the old U, which compaction never touches) are put again on
 * the new entry: the operations are not run twice.
 */
private[sharedstate] final class OperationChain(
    val partition: StatePartition,
    val key: Key,
    ops: Array[ChainOp],
    horizon: Long,
    journaled: Boolean = false) {
  private var cursor = 0
  private var before: ValueSet = null
  private var builder: ValueSet.Builder = null
  private val puts = ArrayBuffer.empty[(Long, Array[Byte])]
  private var applied = 0
  private val rule = partition.updateRule
  private val readsPrevious = rule.readsPrevious
  private[txn] val rejected = ArrayBuffer.empty[RejectedUpdate]
  // `journaled`: the pairs transactions put, in put order, for the State's journal.
  private[txn] val transactionPuts: ArrayBuffer[(Long, Array[Byte])] = if (journaled) ArrayBuffer.empty else null

  def size: Int = ops.length

  /**
   * Runs from where it stopped to the end (true) or to a write of an undecided transaction, where it
   * parks (false; the decider calls `resume` with it).
   */
  def run(resume: OperationChain => Unit): Boolean = {
    if (builder == null) {
      before = partition.get(key)
      builder = new ValueSet.Builder(if (before == null) ValueSet.Empty else before, ops.length, 0)
    }
    var parked = false
    while (!parked && cursor < ops.length) {
      ops(cursor) match {
        case op: ChainOp.Plain => plain(op); cursor += 1
        case op: ChainOp.Read =>
          op.run.resolveRead(op.index, OperationChain.visible(builder.valueAtOrBefore(op.time)), resume)
          cursor += 1
        case op: ChainOp.Write =>
          if (!op.run.decided && op.run.park(this)) parked = true
          else {
            op.run.writeAt(op.index) match {
              case WriteValue.Put(v) => putWritten(op.time, v)
              case WriteValue.Delete => putWritten(op.time, ValueSet.Deleted)
              case WriteValue.Keep =>
            }
            cursor += 1
          }
        case op: ChainOp.Put => put(op.time, op.value); cursor += 1
      }
    }
    !parked
  }

  private def plain(op: ChainOp.Plain): Unit =
    try {
      val previous = if (readsPrevious) OperationChain.visible(builder.valueAtOrBefore(op.time)).orNull else null
      val v = rule(previous, op.value)
      if (v == null) throw new SharedStateException(s"update rule '${rule.name}' returned null")
      put(op.time, v)
      applied += 1
    } catch {
      case e: Exception =>
        val o = op.origin
        rejected += RejectedUpdate(
          key.bytes,
          op.time,
          op.value,
          s"${RejectedUpdate.RuleFailed}: ${e.getMessage}",
          if (o == null) "" else o.writer,
          if (o == null) -1L else o.epoch,
          if (o == null) Long.MinValue else o.updateProgress
        )
    }

  private def put(t: Long, v: Array[Byte]): Unit = { builder.put(t, v); puts += ((t, v)) }

  private def putWritten(t: Long, v: Array[Byte]): Unit = {
    put(t, v)
    if (transactionPuts != null) transactionPuts += ((t, v))
  }

  /** Publishes the chain's pairs (after it ran to the end); nothing when it put none. */
  def publish(): Unit = if (puts.nonEmpty) {
    var done = false
    while (!done) {
      val built = builder.result()
      val after = if (horizon == Long.MinValue) built else partition.compactionRule.compact(built, horizon)
      if (partition.publishEntry(key, before, after, applied, built.size - after.size)) done = true
      else {
        before = partition.get(key)
        builder = new ValueSet.Builder(if (before == null) ValueSet.Empty else before, puts.length, 0)
        puts.foreach { case (t, v) => builder.put(t, v) }
      }
    }
  }
}

private[sharedstate] object OperationChain {

  /** A value as a read sees it: None for no value or a delete. */
  def visible(v: Array[Byte]): Option[Array[Byte]] = if (v == null || v.length == 0) None else Some(v)
}
