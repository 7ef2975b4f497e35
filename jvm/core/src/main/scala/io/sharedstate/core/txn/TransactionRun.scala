package io.sharedstate.core.txn

import java.util.concurrent.atomic.{AtomicInteger, AtomicReference}
import scala.collection.immutable.ArraySeq

/**
 * One transaction while its batch executes: the values its reads resolved, the count of reads still
 * open, and its decision. Lock-free: each read is stored by the one chain that resolves it, then
 * counted down; the thread that resolves the last read decides (the count's atomic decrement orders
 * every stored read before the decision). Chains whose next operation is one of this transaction's
 * writes park on it while it is undecided: `waiters` is the list of parked chains, compare-and-set
 * to add one, and swapped for null (decided) by the decider, who then resumes each of them. A chain
 * that finds null goes on (the decision was published before the swap), so no wake-up is lost.
 *
 * @param rank the transaction's position in the batch's (time, id) order
 */
private[sharedstate] final class TransactionRun(val id: TransactionId, val txn: Transaction, val rank: Int) {
  private val readValues = new Array[Option[Array[Byte]]](txn.reads.length)
  private val openReads = new AtomicInteger(txn.reads.length)
  private val waiters = new AtomicReference[List[OperationChain]](Nil)
  // Written by the decider before `waiters` becomes null.
  private var writes: IndexedSeq[WriteValue] = null
  private var abortReason: String = null

  def time: Long = txn.time

  /** Stores read `i`; the read that resolves the last one decides, and resumes the parked chains. */
  def resolveRead(i: Int, value: Option[Array[Byte]], resume: OperationChain => Unit): Unit = {
    readValues(i) = value
    if (openReads.decrementAndGet() == 0) decide(resume)
  }

  /** For a transaction that reads nothing: decides before any chain runs. */
  def decideWithoutReads(): Unit = if (txn.reads.isEmpty) decide(_ => ())

  def decided: Boolean = waiters.get == null

  /** Parks `chain` until the decision; false when it is already decided (go on). */
  def park(chain: OperationChain): Boolean = {
    var parked = false
    var done = false
    while (!done) {
      val w = waiters.get
      if (w == null) done = true
      else if (waiters.compareAndSet(w, chain :: w)) { parked = true; done = true }
    }
    parked
  }

  /** What the transaction writes to key `j` of its write set; only once decided. */
  def writeAt(j: Int): WriteValue = if (writes == null) WriteValue.Keep else writes(j)

  def committed: Boolean = writes != null

  /** The outcome; only after the batch has run. */
  def outcome: TransactionOutcome =
    TransactionOutcome(id, txn.time, committed, ArraySeq.unsafeWrapArray(readValues), abortReason, txn.payload)

  private def decide(resume: OperationChain => Unit): Unit = {
    try {
      txn.logic.decide(txn, ArraySeq.unsafeWrapArray(readValues)) match {
        case TransactionDecision.Commit(ws) =>
          if (ws == null || ws.length != txn.writes.length) {
            abortReason =
              s"${TransactionRun.BadDecision}: the logic committed ${if (ws == null) "null" else ws.length} " +
                s"write(s) for a write set of ${txn.writes.length}"
          } else if (TransactionRun.hasEmptyWrite(ws)) {
            abortReason = s"${TransactionRun.BadDecision}: a write is null or puts a null or empty value"
          } else writes = ws
        case TransactionDecision.Abort(reason) => abortReason = if (reason == null) "aborted" else reason
        case null => abortReason = s"${TransactionRun.BadDecision}: the logic returned null"
      }
    } catch {
      case e: Exception => abortReason = s"${TransactionRun.LogicFailed}: ${e.getMessage}"
    }
    val parked = waiters.getAndSet(null)
    parked.foreach(resume)
  }
}

private[sharedstate] object TransactionRun {
  val LogicFailed = "logic_failed"
  val BadDecision = "bad_decision"

  // A write that is null or puts a null or empty value (a loop: this runs per decision).
  private def hasEmptyWrite(ws: IndexedSeq[WriteValue]): Boolean = {
    var i = 0
    while (i < ws.length) {
      ws(i) match {
        case null => return true
        case WriteValue.Put(v) if v == null || v.isEmpty => return true
        case _ =>
      }
      i += 1
    }
    false
  }
}
