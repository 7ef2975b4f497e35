package io.sharedstate.core.txn

import io.sharedstate.core.txn.apps.{GrepSum, OnlineBidding, StreamingLedger, TollProcessing}
import org.scalatest.funsuite.AnyFunSuite

/**
 * The transaction engine against the sequential oracle ([[SequentialTransactions]]: everything admitted,
 * applied one by one in (time, tie) order) on random workloads with fixed seeds, through
 * [[TxnModelRun]] (several writers, random epochs, tasks, staging order, retries, replays, late
 * events), on the committing thread and on pools of 1, 2 and 4 threads: the outcomes (in order, with
 * the values read) and every key's final history must be equal.
 */
class TransactionModelSuite extends AnyFunSuite {
  private val long = sys.props.contains("sharedstate.stress") || sys.env.contains("SHAREDSTATE_STRESS")
  private val seeds = if (long) 1 to 400 else 1 to 24

  private def same(r: TxnModelRun.Result, what: String): Unit = {
    assert(r.engineOutcomes.size == r.oracleOutcomes.size, s"$what: outcome count")
    r.engineOutcomes.zip(r.oracleOutcomes).zipWithIndex.foreach { case ((e, o), i) =>
      assert(e.id == o.id && e.time == o.time, s"$what: outcome $i is ${e.id}@${e.time}, oracle ${o.id}@${o.time}")
      assert(e.committed == o.committed,
        s"$what: ${e.id} committed ${e.committed} (${e.reason}), oracle ${o.committed} (${o.reason})")
      assert(e.reads.map(_.map(_.toSeq)) == o.reads.map(_.map(_.toSeq)), s"$what: reads of ${e.id}")
      assert(Option(e.payload).map(_.toSeq) == Option(o.payload).map(_.toSeq), s"$what: payload of ${e.id}")
      if (!e.committed)
        assert(e.reason.takeWhile(_ != ':') == o.reason.takeWhile(_ != ':'), s"$what: reason of ${e.id}")
    }
    val keys = r.engineHistories.keySet ++ r.oracleHistories.keySet
    keys.foreach(k =>
      assert(r.engineHistories.get(k) == r.oracleHistories.get(k), s"$what: history of ${k._1} key ${k._2}"))
  }

  test("random transactions and plain updates over three States equal the sequential oracle (1..4 threads)") {
    var txns = 0
    var aborted = 0
    var late = 0
    seeds.foreach { seed =>
      val threads = Seq(0, 1, 2, 4)(seed % 4)
      val r = new TxnModelRun(new RandomMixWorkload(n = 300, keys = 12), seed, threads).run()
      same(r, s"seed $seed, $threads thread(s)")
      txns += r.transactions; aborted += r.aborted; late += r.lateTxns + r.lateUpdates
    }
    // The workload exercises what it claims to: aborts and late events do happen.
    assert(aborted > txns / 20 && aborted < txns, s"$aborted of $txns aborted")
    assert(late > 0, "no late event")
  }

  // The four TStream applications with the paper's parameters (10k records, Zipf 0.6, 25%
  // multi-partition of length 4; TP 100 segments, skew 0.2), fewer events per run.
  private val appSeeds = if (long) 1 to 40 else 1 to 4
  Seq[Int => TxnWorkload](n => new GrepSum(n), n => new StreamingLedger(n), n => new OnlineBidding(n),
    n => new TollProcessing(n)).foreach { make =>
    val name = make(1).name
    test(s"TStream application ${name.toUpperCase} equals the sequential oracle (1..4 threads)") {
      var txns = 0
      var aborted = 0
      appSeeds.foreach { seed =>
        Seq(0, 1, 2, 4).foreach { threads =>
          val r = new TxnModelRun(make(1500), seed, threads).run()
          same(r, s"$name seed $seed, $threads thread(s)")
          txns += r.transactions; aborted += r.aborted
        }
      }
      assert(txns > 0)
      info(s"$txns transactions, $aborted aborted")
    }
  }
}
