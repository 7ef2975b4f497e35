package io.sharedstate.spark.durable

import io.sharedstate.core.State
import java.util.concurrent.{Executors, ScheduledExecutorService, TimeUnit}
import org.apache.spark.internal.Logging

/**
 * Keeps a read-only State up with the application that writes its root: each round reads the
 * changelog files added since the last Delta version it read and replays the journal events after
 * the last one it replayed through the engine's own steps (as recovery does). Runs every `intervalMs`
 * in the background, and on demand before each read (`catchUp`).
 */
private[sharedstate] final class StateFollower(state: State, log: DeltaChangelog, from: Recovered, intervalMs: Long)
    extends Logging {
  private var version = from.version
  private var lastSeq = from.nextSeq - 1
  private var seen: Set[String] = log.filesOf(version)
  private val schedule: Option[ScheduledExecutorService] = if (intervalMs <= 0) None
  else Some {
    val executor = Executors.newSingleThreadScheduledExecutor { (r: Runnable) =>
      val t = new Thread(r, s"sharedstate-follow-${state.name}"); t.setDaemon(true); t
    }
    executor.scheduleWithFixedDelay(
      () =>
        try catchUp()
        catch { case e: Exception => logWarning(s"State ${state.name}: following ${log.path} failed", e) },
      intervalMs,
      intervalMs,
      TimeUnit.MILLISECONDS
    )
    executor
  }

  /**
   * Replays what the changelog holds beyond what this State has; returns the Delta version it is now
   * at. When the owner's retention trimmed files this State has not read (two rounds within one
   * interval), it first goes to the newest version before that trim, whose files are still on disk.
   */
  def catchUp(): Long = synchronized {
    val latest = log.latestVersion
    while (version < latest) {
      val upTo = log.newestNotTrimmedPast(_ => lastSeq, version, latest).filter(_ > version).getOrElse(latest)
      val (rows, paths) = log.readNewFiles(upTo, seen)
      lastSeq = StateRecovery.replayEvents(state, rows, lastSeq, _ => -1L, log.path).lastSeq
      seen = paths
      version = upTo
    }
    version
  }

  def stop(): Unit = schedule.foreach(_.shutdownNow())
}
