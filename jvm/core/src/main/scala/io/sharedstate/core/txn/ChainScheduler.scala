package io.sharedstate.core.txn

import java.util.concurrent.{CompletableFuture, ExecutionException, Executor, ForkJoinPool}
import java.util.concurrent.atomic.AtomicInteger

/**
 * Runs a batch's operation chains (TStream's state-access mode) on an executor, without locks.
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
 * order, and the smallest open operation of the batch can always run.
 *
 * `executor == null` runs everything on the calling thread (a resumed chain goes to a local queue);
 * otherwise the chains are cut into slices of consecutive chains, one task per slice, and each
 * resumed chain is a task of its own. [[run]] returns once every chain ran to its end and published;
 * the calling thread waits meanwhile, so it must not be the only thread of the executor (a
 * ForkJoinPool worker may call it: the pool compensates for a blocked worker).
 */
private[sharedstate] final class ChainScheduler(executor: Executor, parallelism: Int) {

  def run(chains: Array[OperationChain]): Unit = if (chains.nonEmpty) {
    if (executor == null) runInline(chains) else runParallel(chains)
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
    val open = new AtomicInteger(chains.length)
    val done = new CompletableFuture[Unit]()
    lazy val resume: OperationChain => Unit = c => executor.execute(() => step(c))
    def finish(c: OperationChain): Unit = {
      c.publish()
      if (open.decrementAndGet() == 0) done.complete(())
    }
    def step(c: OperationChain): Unit =
      try { if (c.run(resume)) finish(c) }
      catch { case e: Throwable => done.completeExceptionally(e) }
    val slices = math.max(1, math.min(chains.length, parallelism * 4))
    var s = 0
    while (s < slices) {
      val from = (chains.length.toLong * s / slices).toInt
      val until = (chains.length.toLong * (s + 1) / slices).toInt
      executor.execute { () =>
        var i = from
        while (i < until && !done.isDone) { step(chains(i)); i += 1 }
      }
      s += 1
    }
    try done.get()
    catch { case e: ExecutionException => throw e.getCause }
  }
}

private[sharedstate] object ChainScheduler {

  /** On the common fork/join pool, as the States apply their own chains. */
  def common: ChainScheduler = new ChainScheduler(ForkJoinPool.commonPool(), ForkJoinPool.getCommonPoolParallelism)

  /** On the calling thread only. */
  val inline: ChainScheduler = new ChainScheduler(null, 1)
}
