package io.sharedstate.core.txn

import java.util.concurrent.{ConcurrentLinkedQueue, Executor, ForkJoinPool}
import java.util.concurrent.atomic.{AtomicIntegerArray, AtomicReference}
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
private[sharedstate] final class ChainScheduler(executor: Executor, val parallelism: Int) {

  def run(chains: Array[OperationChain]): Unit = if (chains.nonEmpty) {
    if (executor == null || parallelism <= 1 || chains.length < 2) runInline(chains)
    else runRound(new ChainScheduler.Round(1, _ => chains))
  }

  /**
   * Prepares a round in `units` parts and runs the chains they build: `prepare(u)` builds part u's
   * chains (each part owns its keys: no chain of one part touches a key of another, and a part's
   * preparation touches only its own keys' partitions), each part on whichever worker claims it. No
   * chain starts before every part is prepared (a worker that finds no part left waits only for the
   * parts being prepared on running threads: never for a helper that has not started). Returns every
   * chain, part by part.
   */
  def prepareAndRun(units: Int, prepare: Int => Array[OperationChain]): Array[OperationChain] =
    if (executor == null || parallelism <= 1) {
      val parts = Array.tabulate(units)(prepare)
      val chains = ChainScheduler.concat(parts)
      if (chains.nonEmpty) runInline(chains)
      chains
    } else {
      val round = new ChainScheduler.Round(units, prepare)
      runRound(round)
      round.chains
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

  private def runRound(round: ChainScheduler.Round): Unit = {
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

  // Ints per cache line and then some (a line is 64 bytes; 128 keeps adjacent-line prefetch apart).
  private final val Pad = 32

  private[txn] def concat(parts: Array[Array[OperationChain]]): Array[OperationChain] =
    if (parts.length == 1) parts(0)
    else {
      val out = new Array[OperationChain](parts.iterator.map(_.length).sum)
      var at = 0
      parts.foreach { p => System.arraycopy(p, 0, out, at, p.length); at += p.length }
      out
    }

  // Backs off a worker with nothing to do: spins briefly, then yields, then naps. What it waits for
  // is being done by a running thread and is short (a chain, a part's preparation), and a nap lasts
  // at least the timer's slack (~50 us on Linux, most of a small round): it yields long before it naps.
  private def idle(round: Int): Unit =
    if (round < 64) Thread.onSpinWait()
    else if (round < 64 + IdleYields) Thread.`yield`()
    else LockSupport.parkNanos(20000L)

  private final val IdleYields = 4096

  /**
   * One round's shared work: the parts not prepared yet, then the chains not claimed yet (part by
   * part, as one sequence), the resumed ones, how many are still open.
   */
  private final class Round(units: Int, prepare: Int => Array[OperationChain]) {
    // The round's counters, each on a cache line of its own (both workers write them all the time:
    // sharing a line would make every claim and count a miss on the other core).
    private val counters = new AtomicIntegerArray(5 * Pad)
    private final val UnitCursor = Pad
    private final val Prepared = 2 * Pad
    private final val Cursor = 3 * Pad
    private final val Open = 4 * Pad
    // Each part's chains, written before `prepared` counts it (the count's increment publishes them).
    private val parts = new Array[Array[OperationChain]](units)
    private val resumed = new ConcurrentLinkedQueue[OperationChain]()
    val failure = new AtomicReference[Throwable]()

    /** Every chain, part by part; only after the round ran. */
    def chains: Array[OperationChain] = concat(parts)

    // Runs `c` on with `resume`; true when it ran to its end (and published).
    private def step(c: OperationChain, resume: OperationChain => Unit): Boolean =
      if (c.run(resume)) { c.publish(); true }
      else false

    /** Works until every chain is done (or one failed). */
    def work(): Unit =
      try {
        var u = counters.getAndIncrement(UnitCursor)
        while (u < units && failure.get == null) {
          val built = prepare(u)
          parts(u) = built
          counters.addAndGet(Open, built.length)
          counters.incrementAndGet(Prepared)
          u = counters.getAndIncrement(UnitCursor)
        }
        var waited = 0
        while (counters.get(Prepared) < units && failure.get == null) { idle(waited); waited += 1 }
        if (failure.get == null) runChains()
      } catch { case e: Throwable => failure.compareAndSet(null, e) }

    private def runChains(): Unit = {
      // Where each part starts in the sequence of all chains.
      val offsets = new Array[Int](units + 1)
      var p = 0
      while (p < units) { offsets(p + 1) = offsets(p) + parts(p).length; p += 1 }
      val total = offsets(units)
      var waited = 0
      // Chains this worker finished and has not subtracted from Open yet (one subtraction per claim).
      var done = 0
      // The first chain a decision made here resumes runs next here, while the decision's lines are
      // in this core's cache; any others go to the shared queue, for whichever worker is free.
      var next: OperationChain = null
      val resumeHere: OperationChain => Unit = c => if (next == null) next = c else resumed.offer(c)
      while (counters.get(Open) > done && failure.get == null) {
        var c = next
        if (c != null) next = null else c = resumed.poll()
        if (c != null) { if (step(c, resumeHere)) done += 1; waited = 0 }
        else {
          val from = if (counters.get(Cursor) < total) counters.getAndAdd(Cursor, Claim) else total
          if (from < total) {
            var i = from
            val until = math.min(from + Claim, total)
            p = 0
            while (i < until) {
              while (i >= offsets(p + 1)) p += 1
              if (step(parts(p)(i - offsets(p)), resumeHere)) done += 1
              i += 1
            }
            waited = 0
          } else {
            // Every chain is claimed: the open ones are parked or running elsewhere.
            if (done > 0) { counters.addAndGet(Open, -done); done = 0 }
            idle(waited); waited += 1
          }
        }
      }
      if (done > 0) counters.addAndGet(Open, -done)
    }
  }
}
