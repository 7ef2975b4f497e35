package io.sharedstate.bench.txn

import io.sharedstate.core.Key
import io.sharedstate.core.txn._
import java.util.concurrent.{ConcurrentHashMap, CountDownLatch, ExecutorService}
import java.util.concurrent.atomic.AtomicLong
import java.util.concurrent.locks.ReentrantLock
import scala.collection.immutable.ArraySeq

/**
 * The peers of the transaction engine, both on a latest-value map (no versions), over transactions
 * already sorted by (time, id):
 *
 *  - `sequential`: one thread applies them one by one (TStream's No-Lock on one core; the oracle's order);
 *  - `lock`: TStream's LOCK: strict two-phase locking with per-key locks, each transaction taking its
 *    locks in key order, granted in timestamp order by a lockAhead counter (a transaction may insert its
 *    locks only when every earlier one has inserted its own), on `threads` workers taking transactions
 *    round-robin. Conflicting transactions thus run in timestamp order, as the engine's do. A worker
 *    waiting for its turn spins briefly, then yields (the idle policy of the other benchmarks here).
 */
object TxnBaselines {
  final class Store {
    val values = new ConcurrentHashMap[(String, Key), Array[Byte]]()
    def read(k: StateKey): Option[Array[Byte]] = Option(values.get((k.state, k.key)))
    def apply(txn: Transaction, reads: IndexedSeq[Option[Array[Byte]]]): Boolean = {
      val decision =
        try txn.logic.decide(txn, reads)
        catch { case _: Exception => TransactionDecision.Abort("logic_failed") }
      decision match {
        case TransactionDecision.Commit(ws) if ws.length == txn.writes.length =>
          var j = 0
          while (j < ws.length) {
            val k = txn.writes(j)
            ws(j) match {
              case WriteValue.Put(v) => values.put((k.state, k.key), v)
              case WriteValue.Delete => values.remove((k.state, k.key))
              case WriteValue.Keep =>
            }
            j += 1
          }
          true
        case _ => false
      }
    }
  }

  private def readAll(store: Store, txn: Transaction): IndexedSeq[Option[Array[Byte]]] = {
    val a = new Array[Option[Array[Byte]]](txn.reads.length)
    var i = 0
    while (i < a.length) { a(i) = store.read(txn.reads(i)); i += 1 }
    ArraySeq.unsafeWrapArray(a)
  }

  /** Applies `txns` (sorted) one by one; returns how many committed. */
  def sequential(txns: Array[Transaction]): Int = {
    val store = new Store
    var committed = 0
    txns.foreach(t => if (store.apply(t, readAll(store, t))) committed += 1)
    committed
  }

  /** LOCK on `threads` workers of `pool`; returns how many committed. */
  def lock(txns: Array[Transaction], threads: Int, pool: ExecutorService): Int = {
    val store = new Store
    val locks = new ConcurrentHashMap[(String, Key), ReentrantLock]()
    val lockAhead = new AtomicLong()
    val committed = new AtomicLong()
    // Each transaction's keys, sorted and deduplicated: the order its locks are taken in.
    val keyOrder: Array[Array[ReentrantLock]] = txns.map { t =>
      (t.reads ++ t.writes).map(k => (k.state, k.key)).distinct
        .sortWith((a, b) =>
          if (a._1 != b._1) a._1 < b._1 else java.util.Arrays.compareUnsigned(a._2.bytes, b._2.bytes) < 0)
        .map(k => locks.computeIfAbsent(k, _ => new ReentrantLock())).toArray
    }
    val done = new CountDownLatch(threads)
    (0 until threads).foreach { w =>
      pool.execute { () =>
        var r = w
        while (r < txns.length) {
          // Spin briefly, then yield: on a machine with fewer cores than threads the turn-holder must run.
          var spins = 0
          while (lockAhead.get != r) {
            if (spins < 64) { spins += 1; Thread.onSpinWait() }
            else Thread.`yield`()
          }
          val ls = keyOrder(r)
          ls.foreach(_.lock())
          lockAhead.incrementAndGet() // locks inserted: the next transaction may take its own
          try { if (store.apply(txns(r), readAll(store, txns(r)))) committed.incrementAndGet() }
          finally ls.foreach(_.unlock())
          r += threads
        }
        done.countDown()
      }
    }
    done.await()
    committed.get.toInt
  }
}
