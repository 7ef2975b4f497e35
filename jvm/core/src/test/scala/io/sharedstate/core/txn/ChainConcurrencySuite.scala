package io.sharedstate.core.txn

import io.sharedstate.core.{EventTime, Key, State, StatePartition, UpdateBatch}
import io.sharedstate.core.rules.UpdateRule
import io.sharedstate.core.txn.apps.StreamingLedger
import java.util.concurrent.{ConcurrentHashMap, ForkJoinPool}
import java.util.concurrent.atomic.AtomicInteger
import org.jetbrains.lincheck.datastructures.{ModelCheckingOptions, Operation, StressOptions, Validate}
import org.scalatest.funsuite.AnyFunSuite

/**
 * The lock-free dependency protocol of one transaction ([[TransactionRun]]): two chains resolve its two
 * reads while others park on it. Linearizable against the same object run sequentially (a park
 * answers "go" exactly when both reads were resolved before it), and afterwards every chain that parked
 * was resumed exactly once and no chain that went on was resumed (no lost or doubled wake-up).
 */
class LincheckedTransactionRun {
  private val resumed = new ConcurrentHashMap[OperationChain, AtomicInteger]()
  private val went = ConcurrentHashMap.newKeySet[OperationChain]()
  private val parkedChains = ConcurrentHashMap.newKeySet[OperationChain]()
  private val resolves = new AtomicInteger()
  private val run = new TransactionRun(
    TransactionId("w", 0, 0, 0),
    new Transaction(0L, IndexedSeq(TxnRows.key("s", 1), TxnRows.key("s", 2)),
      IndexedSeq(TxnRows.key("s", 1), TxnRows.key("s", 2)),
      StreamingLedger.Deposit(1, 1)),
    0
  )
  private val partition = new StatePartition(0, UpdateRule.Replace)
  private var read0 = false
  private var read1 = false
  private val resume: OperationChain => Unit =
    c => resumed.computeIfAbsent(c, _ => new AtomicInteger()).incrementAndGet()

  @Operation(nonParallelGroup = "read0")
  def resolve0(): Unit = if (!read0) { read0 = true; resolves.incrementAndGet(); run.resolveRead(0, None, resume) }

  @Operation(nonParallelGroup = "read1")
  def resolve1(): Unit =
    if (!read1) { read1 = true; resolves.incrementAndGet(); run.resolveRead(1, Some(TxnRows.long(5)), resume) }

  @Operation
  def park(): String = {
    val chain = OperationChain.ofOthers(partition, new Key(Array[Byte](1)), 0, Array.empty, EventTime.MinusInfinity,
      journaled = false)
    if (run.park(chain)) { parkedChains.add(chain); "parked" }
    else { went.add(chain); "go" }
  }

  @Operation
  def decided(): Boolean = run.decided

  @Validate
  def everyParkedChainResumedOnce(): Unit = {
    if (resolves.get == 2) {
      parkedChains.forEach(c =>
        check(resumed.get(c) != null && resumed.get(c).get == 1, "a parked chain was not resumed exactly once"))
      check(run.decided && run.committed, "both reads resolved but no commit decision")
    } else parkedChains.forEach(c => check(resumed.get(c) == null, "a chain was resumed before the decision"))
    went.forEach(c => check(resumed.get(c) == null, "a chain that went on was resumed"))
  }

  private def check(ok: Boolean, what: String): Unit = if (!ok) throw new IllegalStateException(what)
}

class ChainConcurrencySuite extends AnyFunSuite {
  private val long = sys.props.contains("sharedstate.stress") || sys.env.contains("SHAREDSTATE_STRESS")

  test("a transaction's reads, decision and parked writes: linearizable, no lost wake-up (Lincheck model checking)") {
    new ModelCheckingOptions()
      .iterations(if (long) 200 else 12)
      .invocationsPerIteration(if (long) 5000 else 300)
      .threads(3)
      .actorsPerThread(2)
      .check(classOf[LincheckedTransactionRun])
  }

  test("the same under Lincheck stress (real threads)") {
    new StressOptions()
      .iterations(if (long) 200 else 20)
      .invocationsPerIteration(if (long) 10000 else 500)
      .threads(3)
      .actorsPerThread(2)
      .check(classOf[LincheckedTransactionRun])
  }

  /**
   * Seeded stress of whole rounds: thousands of transfers over few hot accounts (most writes park on
   * a decision another thread makes) committed as one epoch, so they run as one round of chains on 4
   * threads; the outcomes and balances must equal the sequential oracle's every time.
   */
  // One contended round (thousands of transfers over few hot accounts: most writes park on a decision
  // another chain makes) through `group`, against the sequential oracle.
  private def contendedRound(seed: Int, executor: java.util.concurrent.Executor, parallelism: Int): Unit = {
    val workload = new StreamingLedger(3000, records = 40, skew = 0.6)
    val states = workload.states.map(new State(_))
    val group = new TransactionGroup("stress", states, executor, parallelism, parallelFrom = 0L)
    val oracle = new SequentialTransactions(workload.states)
    group.registerWriter("w")
    val batch = new TransactionBatch
    workload.events(seed).foreach {
      case TxnEvent.Txn(t) => batch.add(t); oracle.txn(TransactionId("w", 0, 0, batch.size - 1), t)
      case other => fail(s"unexpected $other")
    }
    group.stage("w", 0, 0, batch)
    group.commitEpoch("w", 0, 0L)
    group.finishWriter("w") // U to +infinity: the whole batch is one round
    val engine = group.drainOutcomes()
    val expected = oracle.run()
    assert(engine.map(o => (o.id, o.committed, o.reads.map(_.map(_.toSeq)))) ==
        expected.map(o => (o.id, o.committed, o.reads.map(_.map(_.toSeq)))), s"seed $seed outcomes")
    states.foreach { s =>
      (0 until s.partitionCount).foreach(p =>
        s.partition(p).foreachEntry { (k, set) =>
          val h = oracle.histories((s.name, k.bytes.toSeq))
          assert((0 until set.size).map(i => (set.timeAt(i), set.valueAt(i).toSeq)) == h, s"seed $seed ${s.name}")
        })
    }
  }

  test("one large contended round on 4 threads equals the sequential oracle (seeded stress)") {
    val pool = new ForkJoinPool(4)
    try (1 to (if (long) 200 else 12)).foreach(seed => contendedRound(seed, pool, 4))
    finally pool.shutdownNow()
  }

  test("the calling thread alone finishes a round whose helpers never start, or start late on a busy pool") {
    // Helpers held until the round is over: they must find nothing left and end.
    val held = new java.util.concurrent.ConcurrentLinkedQueue[Runnable]()
    (1 to 4).foreach { seed =>
      contendedRound(seed, (r: Runnable) => held.add(r), 3)
      assert(held.size == 2, "two helpers asked for")
      Iterator.continually(held.poll()).takeWhile(_ != null).foreach(_.run())
    }
    // A pool of one thread, busy half the time: helpers queue behind each other and join mid-round.
    val pool = new ForkJoinPool(1)
    try (5 to 10).foreach { seed =>
        if (seed % 2 == 0) pool.execute(() => Thread.sleep(5))
        contendedRound(seed, pool, 4)
      }
    finally pool.shutdownNow()
  }

  // One round of random transactions and plain updates over three States of 1-3 partitions (the mix
  // workload, few hot keys: aborts, deletes, ties, throwing logic) through `group`, prepared in as many
  // parts as the scheduler has workers, against the sequential oracle: outcomes and every key's history.
  private def mixedRound(seed: Int, executor: java.util.concurrent.Executor, parallelism: Int): Unit = {
    val workload = new RandomMixWorkload(2000, keys = 10)
    val states = workload.states.map(new State(_))
    val group = new TransactionGroup("mixed", states, executor, parallelism, parallelFrom = 0L)
    val oracle = new SequentialTransactions(workload.states)
    group.registerWriter("w")
    val batch = new TransactionBatch
    val updates = states.map(s => s.name -> new UpdateBatch).toMap
    workload.events(seed).foreach {
      case TxnEvent.Txn(t) => batch.add(t); oracle.txn(TransactionId("w", 0, 0, batch.size - 1), t)
      case TxnEvent.Plain(s, k, t, v) => updates(s).add(k, t, v); oracle.plain(s, k, t, v)
    }
    group.stage("w", 0, 0, batch)
    states.foreach(s => s.stage("w", 0, 0, updates(s.name)))
    group.commitEpoch("w", 0, 0L)
    group.finishWriter("w") // U to +infinity: the whole epoch is one round
    val engine = group.drainOutcomes()
    val expected = oracle.run()
    assert(
      engine.map(o => (o.id, o.committed, o.reads.map(_.map(_.toSeq)), Option(o.reason).map(_.takeWhile(_ != ':')))) ==
        expected.map(o =>
          (o.id, o.committed, o.reads.map(_.map(_.toSeq)), Option(o.reason).map(_.takeWhile(_ != ':')))),
      s"seed $seed outcomes"
    )
    val histories = states.flatMap { s =>
      (0 until s.partitionCount).flatMap { p =>
        val b = scala.collection.mutable.ArrayBuffer.empty[((String, Seq[Byte]), Seq[(Long, Seq[Byte])])]
        s.partition(p).foreachEntry { (k, set) =>
          if (set.size > 0)
            b += ((s.name, k.bytes.toSeq) -> (0 until set.size).map(i => (set.timeAt(i), set.valueAt(i).toSeq)))
        }
        b
      }
    }.toMap
    assert(histories == oracle.histories, s"seed $seed histories")
  }

  test("a round prepared in parts (plain updates and transactions over States of 1-3 partitions) equals the " +
    "sequential oracle, with 2-4 workers, helpers that never start and helpers late on a busy pool (seeded stress)") {
    val seeds = if (long) 1 to 120 else 1 to 9
    val pool = new ForkJoinPool(4)
    val one = new ForkJoinPool(1)
    val held = new java.util.concurrent.ConcurrentLinkedQueue[Runnable]()
    try seeds.foreach { seed =>
        seed % 3 match {
          case 0 => mixedRound(seed, pool, 2 + (seed / 3) % 3)
          case 1 =>
            mixedRound(seed, (r: Runnable) => held.add(r), 3) // the calling thread prepares every part
            Iterator.continually(held.poll()).takeWhile(_ != null).foreach(_.run())
          case _ =>
            one.execute(() => Thread.sleep(3)) // helpers queue behind it and join mid-preparation or later
            mixedRound(seed, one, 3)
        }
      }
    finally { pool.shutdownNow(); one.shutdownNow() }
  }
}
