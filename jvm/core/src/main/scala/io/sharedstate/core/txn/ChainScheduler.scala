package io.sharedstate.core.txn

import java.util.concurrent.{ConcurrentLinkedQueue, Executor, ForkJoinPool}
import java.util.concurrent.atomic.{AtomicInteger, AtomicReference}
import java.util.concurrent.locks.LockSupport

/**
 * Runs a round's operation chains (TStream's state-access mode), without locks.
 *
 * Each chain is walked by one thread at a time, in (time, tie) order. Cross-chain dependencies are
 * per operation: a transaction's decision waits for all its reads (the chain that resolves the last
 * read decides, see [[TransactionRun]]), and each of its writes waits for the decision (the chain
 * parks on the transaction and is resumed when it decides). Nothing else waits.
 *
 * It cannot deadlock: a chain only ever waits at a write of transaction T for T's reads, and every
 * read of T waits only for the operations before it on its own chain, which belong to updates and
 * transactions ordered strictly before T (smaller (time, tie)), or to T itself but never a write
 * of T (a transaction's reads of a key come before its writes of it). So every wait points to an
 * earlier (time, tie), or from T's writes to T's reads: following waits strictly descends a finite
 * order, and the smallest open operation of the round can always run.
 *
 * Workers, not a task per chain: the calling thread and `parallelism - 1` helpers on `executor`
 * each claim runs of consecutive chains from a shared cursor, and a chain a decision resumes goes on
 * a shared lock-free queue that every worker drains before it claims more (no hand-off of an
 * operation to a pool, no wake-up of a sleeping thread). A worker with nothing to do while chains are
 * parked spins briefly, then yields, then naps: the decision that resumes them is being made by a
 * chain another worker runs. The calling thread alone can finish every round (it never waits for a
 * helper: a helper that starts late finds nothing left and ends), so `executor` may be busy, or
 * `parallelism` 1 (all on the calling thread). [[run]] returns once every chain ran to its end and
 * published.
 */
private[sharedstate] final class ChainScheduler(executor: Executor, parallelism: Int) {

  def run(chains: Array[OperationChain]): Unit = if (chains.nonEmpty) {
    if (executor == null || parallelism <= 1 || chains.length < 2) runInline(chains) else runParallel(chains)
  }

  private def runInline(chains: Array[OperationChain]): Unit = {
    val resumed = new java.util.ArrayDeque[OperationChain]()
    val resume: OperationChain => Unit = c => resumed.add(c)
    var finished = 0
    chains.foreach { c => if (c.run(resume)) { c.publish(); finished += 1 } }
    while (!resumed.isEmpty) {
      val c = resumed.poll()
      if (c.run(resume)) { c.publish(); finished += 1 }
    }
    if (finished != chains.length) throw new IllegalStateException(
      s"transaction scheduler: ${chains.length - finished} chain(s) never resumed (a dependency cycle)")
  }

  private def runParallel(chains: Array[OperationChain]): Unit = {
    val round = new ChainScheduler.Round(chains)
    var h = 1
    while (h < parallelism) { executor.execute(() => round.work()); h += 1 }
    round.work()
    round.failure.get match {
      case null =>
      case e => throw e
    }
  }
}

private[sharedstate] object ChainScheduler {

  /** On the common fork/join pool, as the States apply their own chains. */
  def common: ChainScheduler = new ChainScheduler(ForkJoinPool.commonPool(), ForkJoinPool.getCommonPoolParallelism)

  /** On the calling thread only. */
  val inline: ChainScheduler = new ChainScheduler(null, 1)

  // Chains claimed at a time from the cursor: enough to amortise the claim, few enough to balance.
  private val Claim = 8

  /** One round's shared work: the chains not claimed yet, the resumed ones, how many are still open. */
  private final class Round(chains: Array[OperationChain]) {
    private val cursor = new AtomicInteger()
    private val resumed = new ConcurrentLinkedQueue[OperationChain]()
    private val open = new AtomicInteger(chains.length)
    val failure = new AtomicReference[Throwable]()
    private val resume: OperationChain => Unit = c => resumed.offer(c)

    private def step(c: OperationChain): Unit =
      if (c.run(resume)) { c.publish(); open.decrementAndGet() }

    /** Works until every chain is done (or one failed). */
    def work(): Unit =
      try {
        var idle = 0
        while (open.get > 0 && failure.get == null) {
          val c = resumed.poll()
          if (c != null) { step(c); idle = 0 }
          else {
            val from = if (cursor.get < chains.length) cursor.getAndAdd(Claim) else chains.length
            if (from < chains.length) {
              var i = from
              val until = math.min(from + Claim, chains.length)
              while (i < until) { step(chains(i)); i += 1 }
              idle = 0
            } else {
              // Every chain is claimed: the open ones are parked or running elsewhere.
              idle += 1
              if (idle < 64) Thread.onSpinWait()
              else if (idle < 128) Thread.`yield`()
              else LockSupport.parkNanos(20000L)
            }
          }
        }
      } catch { case e: Throwable => failure.compareAndSet(null, e) }
  }
}
