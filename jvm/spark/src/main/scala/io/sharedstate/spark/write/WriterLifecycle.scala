package io.sharedstate.spark.write

import io.sharedstate.spark.cluster.Coordinator
import io.sharedstate.spark.config.UpdateOptions
import java.util.concurrent.{ConcurrentHashMap, Executors, ScheduledExecutorService, TimeUnit}
import org.apache.spark.internal.Logging
import scala.jdk.CollectionConverters._
import scala.util.Try
import scala.util.control.NonFatal

/**
 * A streaming writer holds U back while its query runs, and only then: it registers when the query
 * starts (before its first batch, so a writer that has not planned a batch yet still holds U), is
 * paused when the query stops (it no longer holds U; a restart from the same checkpoint, the same
 * query id, resumes it), and with `idleTimeout` it is paused after that long without new input and
 * resumes, at the current U, when input comes back (updates below U are late as usual).
 */
private[sharedstate] object WriterLifecycle extends Logging {
  private final class Running(val state: String, val writer: String, val idleMs: Long) {
    @volatile var lastInputMs: Long = System.currentTimeMillis()
    @volatile var idle: Boolean = false
  }

  private val running = new ConcurrentHashMap[(String, String), Running]()

  // One daemon thread checks every running writer with an idle timeout.
  private lazy val checker: ScheduledExecutorService = {
    val ex = Executors.newSingleThreadScheduledExecutor { (r: Runnable) =>
      val t = new Thread(r, "sharedstate-writer-idleness"); t.setDaemon(true); t
    }
    ex.scheduleWithFixedDelay(() => checkIdle(), CheckMs, CheckMs, TimeUnit.MILLISECONDS)
    ex
  }
  private val CheckMs = 200L

  /** The query `writer` writing into `state` started: it holds U back from now on. */
  def started(state: String, writer: String, idleTimeoutMicros: Long): Unit = {
    Coordinator.get.state(state).registerWriter(writer)
    val idleMs = if (idleTimeoutMicros == UpdateOptions.NoIdleTimeout) -1L else math.max(1L, idleTimeoutMicros / 1000L)
    running.put((state, writer), new Running(state, writer, idleMs))
    if (idleMs > 0) checker
  }

  /**
   * [[started]] unless `writer` already runs (a real-time partition writer, which every epoch's tasks
   * open again): its idleness clock and state are kept.
   */
  def startedOnce(state: String, writer: String, idleTimeoutMicros: Long): Unit =
    if (!running.containsKey((state, writer))) synchronized {
      if (!running.containsKey((state, writer))) started(state, writer, idleTimeoutMicros)
    }

  /**
   * The query stopped: each State it wrote stops waiting for it (it resumes if the query restarts),
   * and for the partition writers of a real-time updater ([[RealtimeWriters]]) alike.
   */
  def stopped(writer: String): Unit =
    running.values.asScala.filter(r => r.writer == writer || RealtimeWriters.isPartitionOf(r.writer, writer)).toSeq
      .foreach { r =>
        running.remove((r.state, r.writer))
        Try(Coordinator.get.state(r.state).pauseWriter(r.writer)).failed.foreach(e =>
          logWarning(s"State ${r.state}: could not pause stopped writer ${r.writer}", e))
      }

  /**
   * An epoch of `writer` has input: an idle writer rejoins (at the current U) before it commits. Under
   * the writer's lock, as the idleness check: a check that read the input time before this call must
   * not pause the writer after it (its commit would then count for a paused writer, which holds no U).
   */
  def input(state: String, writer: String): Unit = Option(running.get((state, writer))).foreach { r =>
    if (r.idleMs > 0) r.synchronized {
      r.lastInputMs = System.currentTimeMillis()
      if (r.idle) {
        Coordinator.get.state(state).registerWriter(writer)
        r.idle = false
        logInfo(s"State $state: writer $writer has input again; it holds U back from the current U on")
      }
    }
  }

  private def checkIdle(): Unit = running.values.asScala.foreach { r =>
    def quiet = System.currentTimeMillis() - r.lastInputMs > r.idleMs
    if (r.idleMs > 0 && !r.idle && quiet) r.synchronized {
      if (!r.idle && quiet) {
        try {
          Coordinator.get.state(r.state).pauseWriter(r.writer)
          r.idle = true
          logInfo(s"State ${r.state}: writer ${r.writer} had no input for ${r.idleMs} ms; it no longer holds U back")
        } catch { case NonFatal(e) => logWarning(s"State ${r.state}: pausing idle writer ${r.writer} failed", e) }
      }
    }
  }
}
