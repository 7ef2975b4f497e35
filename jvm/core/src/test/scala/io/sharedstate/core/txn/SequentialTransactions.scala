package io.sharedstate.core.txn

import io.sharedstate.core.{Key, RejectedUpdate, SharedStateException, StateSpec}
import io.sharedstate.core.rules.UpdateRule
import scala.collection.immutable.ArraySeq
import scala.collection.mutable

/**
 * The oracle: applies admitted plain updates and transactions one by one in (time, tie) order on a
 * full history per key (a sorted map time -> value, deletes as empty values), with no chains, no
 * threads and no engine code but the update rules. `plain(...)` and `txn(...)` admit in arrival order
 * (the caller decides lateness); [[run]] applies everything admitted and returns the outcomes.
 */
final class SequentialTransactions(specs: Seq[StateSpec]) {
  private val rules: Map[String, UpdateRule] =
    specs.map(s => s.name -> UpdateRule.resolve(s.updateRule, s.valueType)).toMap
  private val history = mutable.HashMap.empty[(String, Key), java.util.TreeMap[Long, Array[Byte]]]
  private val admitted =
    mutable.ArrayBuffer.empty[(Long, Int, Long, Either[(String, Key, Array[Byte]), (TransactionId, Transaction)])]
  private var arrival = 0L
  val ruleFailures = mutable.ArrayBuffer.empty[RejectedUpdate]

  def plain(state: String, key: Array[Byte], time: Long, value: Array[Byte]): Unit = {
    admitted += ((time, 0, arrival, Left((state, new Key(key), value)))); arrival += 1
  }

  def txn(id: TransactionId, t: Transaction): Unit = admitted += ((t.time, 1, 0L, Right((id, t))))

  /** Applies what was admitted since the last run, in order; the outcomes of its transactions in order. */
  def run(): IndexedSeq[TransactionOutcome] = {
    val order = admitted.sortWith { (a, b) =>
      if (a._1 != b._1) a._1 < b._1
      else if (a._2 != b._2) a._2 < b._2
      else (a._4, b._4) match {
        case (Left(_), Left(_)) => a._3 < b._3
        case (Right((x, _)), Right((y, _))) => x < y
        case _ => false
      }
    }
    admitted.clear()
    val out = mutable.ArrayBuffer.empty[TransactionOutcome]
    order.foreach {
      case (t, _, _, Left((state, key, value))) =>
        val h = historyOf(state, key)
        try {
          val rule = rules(state)
          val v = rule(if (rule.readsPrevious) valueAt(h, t).orNull else null, value)
          if (v == null) throw new SharedStateException(s"update rule '${rule.name}' returned null")
          h.put(t, v)
        } catch {
          case e: Exception =>
            ruleFailures += RejectedUpdate(key.bytes, t, value, s"${RejectedUpdate.RuleFailed}: ${e.getMessage}", "",
              -1, 0)
        }
      case (t, _, _, Right((id, txn))) => out += transaction(id, txn, t)
    }
    out.toIndexedSeq
  }

  private def transaction(id: TransactionId, txn: Transaction, t: Long): TransactionOutcome = {
    val reads = txn.reads.map(k => valueAt(historyOf(k.state, k.key), t)).toArray
    val view = ArraySeq.unsafeWrapArray(reads)
    val (writes, reason) =
      try
        txn.logic.decide(txn, view) match {
          case TransactionDecision.Commit(ws)
              if ws != null && ws.length == txn.writes.length &&
                ws.forall(w =>
                  w != null && (w match { case WriteValue.Put(v) => v != null && v.nonEmpty; case _ => true })) =>
            (ws, null)
          case TransactionDecision.Commit(_) => (null, "bad_decision")
          case TransactionDecision.Abort(r) => (null, if (r == null) "aborted" else r)
          case null => (null, "bad_decision")
        }
      catch { case e: Exception => (null, s"logic_failed: ${e.getMessage}") }
    if (writes != null) txn.writes.indices.foreach { j =>
      val k = txn.writes(j)
      writes(j) match {
        case WriteValue.Put(v) => historyOf(k.state, k.key).put(t, v)
        case WriteValue.Delete => historyOf(k.state, k.key).put(t, Array.emptyByteArray)
        case WriteValue.Keep =>
      }
    }
    TransactionOutcome(id, t, writes != null, view, reason, txn.payload)
  }

  private def historyOf(state: String, key: Key) =
    history.getOrElseUpdate((state, key), new java.util.TreeMap[Long, Array[Byte]]())

  private def valueAt(h: java.util.TreeMap[Long, Array[Byte]], t: Long): Option[Array[Byte]] = {
    val e = h.floorEntry(t)
    if (e == null || e.getValue.isEmpty) None else Some(e.getValue)
  }

  /** Every key's history: (state, key bytes) -> (time, value) pairs in time order; keys with none left out. */
  def histories: Map[(String, Seq[Byte]), Seq[(Long, Seq[Byte])]] =
    history.iterator.filter(_._2.size > 0).map { case ((s, k), h) =>
      (s, k.bytes.toSeq) -> {
        val b = Seq.newBuilder[(Long, Seq[Byte])]
        h.forEach((t, v) => b += ((t, v.toSeq)))
        b.result()
      }
    }.toMap
}
