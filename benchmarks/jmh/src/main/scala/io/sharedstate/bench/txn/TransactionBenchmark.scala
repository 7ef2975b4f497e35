package io.sharedstate.bench.txn

import io.sharedstate.core.{State => CoreState}
import io.sharedstate.core.txn._
import io.sharedstate.core.txn.apps.{GrepSum, OnlineBidding, StreamingLedger, TollProcessing}
import java.util.concurrent.{ExecutorService, Executors, ForkJoinPool, TimeUnit}
import org.openjdk.jmh.annotations._

/**
 * The four TStream applications (GS, SL, OB, TP with the paper's parameters: 10k records, Zipf 0.6,
 * 25% multi-partition of length 4; TP 100 segments, skew 0.2), 10,000 transactions per invocation, on:
 *
 *  - `engine`: a TransactionGroup over fresh States; one writer stages 500 transactions per epoch (the
 *    paper's punctuation interval) and commits with progress at the least time of the transactions
 *    still to come (so none is late), so each commit applies one round of operation chains on a
 *    fork/join pool of `threads`;
 *  - `lock`: TStream's LOCK (per-key locks in key order, lockAhead in timestamp order), `threads` workers;
 *  - `sequential`: one thread in (time, id) order (ignores `threads`).
 *
 * The peers run on a latest-value map; the engine keeps versions (every committed write is a pair),
 * with a reader that follows U so keep_latest compaction drops the versions below it, as a caught-up
 * consumer would let it.
 * Throughput in transactions per second.
 */
@BenchmarkMode(Array(Mode.Throughput))
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = Array("-Xmx2g"))
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 2)
@State(Scope.Benchmark)
class TransactionBenchmark {
  @Param(Array("gs", "sl", "ob", "tp"))
  var app: String = _

  @Param(Array("engine", "lock", "sequential"))
  var impl: String = _

  @Param(Array("1", "2"))
  var threads: Int = _

  private var workload: TxnWorkload = _
  private var events: IndexedSeq[Transaction] = _
  private var sorted: Array[Transaction] = _
  private var progressAfter: Array[Long] = _ // per epoch: the least time of every later transaction
  private var pool: ForkJoinPool = _
  private var workers: ExecutorService = _

  @Setup(Level.Trial) def setup(): Unit = {
    workload = app match {
      case "gs" => new GrepSum(TransactionBenchmark.Events)
      case "sl" => new StreamingLedger(TransactionBenchmark.Events)
      case "ob" => new OnlineBidding(TransactionBenchmark.Events)
      case _ => new TollProcessing(TransactionBenchmark.Events + 2)
    }
    events = workload.events(42L).collect { case TxnEvent.Txn(t) => t }
    // The peers' order: (time, id) with the ids the engine gives (epoch = chunk of 500, sequence in it).
    sorted = events.zipWithIndex.sortBy { case (t, i) =>
      (t.time, TransactionId("w", (i / TransactionBenchmark.Interval).toLong, 0, i % TransactionBenchmark.Interval))
    }.map(_._1).toArray
    val chunks = events.grouped(TransactionBenchmark.Interval).toIndexedSeq
    progressAfter =
      chunks.indices.map(e => chunks.drop(e + 1).flatten.map(_.time).minOption.getOrElse(Long.MaxValue)).toArray
    pool = new ForkJoinPool(threads)
    workers = Executors.newFixedThreadPool(threads)
    // The same work everywhere: as many commits from each.
    val expected = TxnBaselines.sequential(sorted)
    require(engine() == expected && TxnBaselines.lock(sorted, threads, workers) == expected,
      s"$app: the engine or LOCK commits differently from the sequential executor")
  }

  @TearDown(Level.Trial) def teardown(): Unit = { pool.shutdownNow(); workers.shutdownNow() }

  @Benchmark
  @OperationsPerInvocation(TransactionBenchmark.Events)
  def run(): Int = impl match {
    case "engine" => engine()
    case "lock" => TxnBaselines.lock(sorted, threads, workers)
    case _ => TxnBaselines.sequential(sorted)
  }

  private def engine(): Int = {
    val states = workload.states.map(new CoreState(_))
    val group = new TransactionGroup("bench", states, pool, threads)
    group.registerWriter("w")
    states.foreach(_.registerReader("r")) // a caught-up reader: keep_latest may drop versions below U
    var committed = 0
    events.grouped(TransactionBenchmark.Interval).zipWithIndex.foreach { case (chunk, epoch) =>
      val batch = new TransactionBatch
      chunk.foreach(batch.add)
      group.stage("w", epoch.toLong, 0, batch)
      group.commitEpoch("w", epoch.toLong, math.min(progressAfter(epoch), Long.MaxValue - 1))
      committed += group.drainOutcomes().count(_.committed)
      states.foreach(s => s.reportFetchProgress("r", s.updateProgress))
    }
    group.finishWriter("w")
    committed += group.drainOutcomes().count(_.committed)
    group.close()
    committed
  }
}

object TransactionBenchmark {
  final val Events = 10000
  final val Interval = 500
}
