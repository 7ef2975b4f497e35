package io.sharedstate.core

import java.util.concurrent.{Executors, ScheduledExecutorService, ScheduledFuture, TimeUnit}

/** One daemon thread that runs the periodic, bounded compaction sweeps of every State in the JVM. */
object CompactionScheduler {
  private lazy val executor: ScheduledExecutorService = Executors.newSingleThreadScheduledExecutor { (r: Runnable) =>
    val t = new Thread(r, "sharedstate-compaction")
    t.setDaemon(true)
    t
  }

  def schedule(state: State, intervalMs: Long): ScheduledFuture[_] =
    executor.scheduleWithFixedDelay(
      () => {
        try state.compactionStep(state.spec.compactionBatch)
        catch { case _: Throwable => () } // a failed round is retried at the next period
      },
      intervalMs,
      intervalMs,
      TimeUnit.MILLISECONDS
    )
}
