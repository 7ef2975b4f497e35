package io.sharedstate.core.txn

import io.sharedstate.core.{Key, RejectedUpdate, SharedStateException, StatePartition, ValueSet}
import scala.collection.mutable.ArrayBuffer

/**
 * The operations of one round on one key of one State, walked by one thread at a time in (time, tie)
 * order: plain updates fold the State's rule, reads resolve a transaction's read, writes install a
 * decided transaction's value. Two sorted sequences make the chain: `others` (plain updates and
 * replayed pairs, [[ChainOp.Order]]) and the transactions' accesses `accesses(from until until)`
 * (longs of [[ChainOp.access]], in the round's (time, id) order, a transaction's reads of the key
 * before its writes of it); at one time the plain updates go first. A write whose transaction is not
 * decided yet parks the chain ([[TransactionRun.park]]); the decider resumes it, maybe on another
 * thread (the park's compare-and-set and the decider's swap order the chain's fields between the two
 * threads).
 *
 * At the end the new value set is published like the State's own chains publish: a compare-and-set
 * against the entry it started from, and if a compaction replaced that entry meanwhile, the chain's
 * pairs (kept, all at or above the old U, which compaction never touches) are put again on the new
 * entry: the operations are not run twice.
 *
 * @param state the index of the chain's State among the round's
 * @param runs  the round's transactions by rank
 */
private[sharedstate] final class OperationChain(
    val partition: StatePartition,
    val key: Key,
    val state: Int,
    others: Array[ChainOp],
    accesses: Array[Long],
    from: Int,
    until: Int,
    runs: Array[TransactionRun],
    horizon: Long,
    journaled: Boolean = false) {
  private var other = 0
  private var access = from
  private var before: ValueSet = null
  private var builder: ValueSet.Builder = null
  // Every pair put, in put order (for a publish that must rebuild on a compacted entry).
  private var putTimes: Array[Long] = null
  private var putValues: Array[Array[Byte]] = null
  private var puts = 0
  private var applied = 0
  private val rule = partition.updateRule
  private val readsPrevious = rule.readsPrevious
  private var failed: ArrayBuffer[RejectedUpdate] = null
  // `journaled`: the pairs transactions put, in put order, for the State's journal.
  private[txn] val transactionPuts: ArrayBuffer[(Long, Array[Byte])] = if (journaled) ArrayBuffer.empty else null

  def size: Int = others.length + until - from

  /** The plain updates the rule failed on, as rejected updates. */
  private[txn] def rejected: collection.Seq[RejectedUpdate] = if (failed == null) Nil else failed

  /**
   * Runs from where it stopped to the end (true) or to a write of an undecided transaction, where it
   * parks (false; the decider calls `resume` with it).
   */
  def run(resume: OperationChain => Unit): Boolean = {
    if (builder == null) {
      before = partition.get(key)
      builder = new ValueSet.Builder(key.bytes, if (before == null) ValueSet.Empty else before, size, 0)
    }
    var parked = false
    while (!parked && (other < others.length || access < until)) {
      if (other < others.length && (access >= until || goesFirst(others(other),
          runs(ChainOp.rankOf(accesses(access)))))) {
        others(other) match {
          case op: ChainOp.Plain => plain(op)
          case op: ChainOp.Put => put(op.time, op.value)
        }
        other += 1
      } else {
        val a = accesses(access)
        val run = runs(ChainOp.rankOf(a))
        if (!ChainOp.isWrite(a)) {
          run.resolveRead(ChainOp.indexOf(a), OperationChain.visible(builder.valueAtOrBefore(run.time)), resume)
          access += 1
        } else if (!run.decided && run.park(this)) parked = true
        else {
          run.writeAt(ChainOp.indexOf(a)) match {
            case WriteValue.Put(v) => putWritten(run.time, v)
            case WriteValue.Delete => putWritten(run.time, ValueSet.Deleted)
            case WriteValue.Keep =>
          }
          access += 1
        }
      }
    }
    !parked
  }

  // Whether `op` goes before the access of `run`: an earlier time, or at its time a plain update.
  private def goesFirst(op: ChainOp, run: TransactionRun): Boolean =
    op.time < run.time || (op.time == run.time && op.cls == 0)

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
        if (failed == null) failed = ArrayBuffer.empty
        failed += RejectedUpdate(
          key.bytes,
          op.time,
          op.value,
          s"${RejectedUpdate.RuleFailed}: ${e.getMessage}",
          if (o == null) "" else o.writer,
          if (o == null) -1L else o.epoch,
          if (o == null) Long.MinValue else o.updateProgress
        )
    }

  private def put(t: Long, v: Array[Byte]): Unit = {
    builder.put(t, v)
    if (putTimes == null) { putTimes = new Array[Long](math.max(size, 1)); putValues = new Array(putTimes.length) }
    else if (puts == putTimes.length) {
      putTimes = java.util.Arrays.copyOf(putTimes, puts * 2); putValues = java.util.Arrays.copyOf(putValues, puts * 2)
    }
    putTimes(puts) = t; putValues(puts) = v; puts += 1
  }

  private def putWritten(t: Long, v: Array[Byte]): Unit = {
    put(t, v)
    if (transactionPuts != null) transactionPuts += ((t, v))
  }

  /** Publishes the chain's pairs (after it ran to the end); nothing when it put none. */
  def publish(): Unit = if (puts > 0) {
    var done = false
    while (!done) {
      val built = builder.result()
      val after = if (horizon == Long.MinValue) built else partition.compactionRule.compact(built, horizon)
      if (partition.publishEntry(key, before, after, applied, built.size - after.size)) done = true
      else {
        before = partition.get(key)
        builder = new ValueSet.Builder(key.bytes, if (before == null) ValueSet.Empty else before, puts, 0)
        var i = 0
        while (i < puts) { builder.put(putTimes(i), putValues(i)); i += 1 }
      }
    }
  }
}

private[sharedstate] object OperationChain {

  /** A value as a read sees it: None for no value or a delete. */
  def visible(v: Array[Byte]): Option[Array[Byte]] = if (v == null || v.length == 0) None else Some(v)

  private val NoOthers = new Array[ChainOp](0)
  private val NoAccesses = new Array[Long](0)

  /** A chain of plain updates and replayed pairs only (no transaction). */
  def ofOthers(partition: StatePartition, key: Key, state: Int, others: Array[ChainOp], horizon: Long,
      journaled: Boolean): OperationChain =
    new OperationChain(partition, key, state, others, NoAccesses, 0, 0, null, horizon, journaled)

  /** No plain update or replayed pair: transactions' accesses only. */
  def noOthers: Array[ChainOp] = NoOthers
}
