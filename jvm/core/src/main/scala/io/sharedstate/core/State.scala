package io.sharedstate.core

import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.atomic.AtomicLong
import java.util.concurrent.locks.ReentrantLock
import scala.collection.mutable
import scala.jdk.CollectionConverters._

/**
 * A named, partitioned, multi-versioned State (Nova). Writers stage updates per (writer, epoch);
 * committing an epoch checks lateness against update progress U, reports the writer's progress,
 * applies every staged update below the new U and only then publishes U, so a read-committed fetch
 * that sees t < U also sees every update at or before t.
 */
final class State(val spec: StateSpec) {
  import State._

  private val rule = UpdateRule.byName(spec.updateRule)
  private val parts = Array.tabulate(spec.partitions)(i => new StatePartition(i, rule))
  private val commitLock = new ReentrantLock()
  private val updateTracker = new ProgressTracker("update", EventTime.MinusInfinity)
  private val lastEpoch = mutable.HashMap.empty[String, Long]
  private val staging = new ConcurrentHashMap[(String, Long), ConcurrentHashMap[Int, UpdateBatch]]()
  private val rejectedLog = new ConcurrentLinkedQueue[RejectedUpdate]()
  private val writerStats = new ConcurrentHashMap[String, WriterStats]()
  @volatile private var u: Long = EventTime.MinusInfinity

  def name: String = spec.name
  def partitionCount: Int = parts.length
  def partition(i: Int): StatePartition = parts(i)
  def partitionOf(key: Key): StatePartition = parts(key.partition(parts.length))

  /** Update progress U: every value with timestamp < U is final. */
  def updateProgress: Long = u

  def registerWriter(writer: String): Unit = underCommitLock {
    updateTracker.register(writer)
    writerStats.putIfAbsent(writer, new WriterStats)
    publishProgress(updateTracker.current)
  }

  def writerProgress(writer: String): Option[Long] = underCommitLock(updateTracker.progressOf(writer))

  /** The last epoch of `writer` that was committed here, or -1. */
  def lastCommittedEpoch(writer: String): Long = underCommitLock(lastEpoch.getOrElse(writer, -1L))

  /**
   * Stages what one task of `writer` produced in `epoch`. A retried task replaces its earlier
   * attempt, so a re-run never stages the same rows twice.
   */
  def stage(writer: String, epoch: Long, task: Int, batch: UpdateBatch): Unit =
    staging.computeIfAbsent((writer, epoch), _ => new ConcurrentHashMap[Int, UpdateBatch]()).put(task, batch)

  /** Drops what an aborted epoch staged. */
  def abortEpoch(writer: String, epoch: Long): Unit = staging.remove((writer, epoch))

  /**
   * Commits `epoch` of `writer` with the writer's new progress (its event-time watermark).
   * Idempotent: an epoch at or below the writer's last committed one changes nothing.
   */
  def commitEpoch(writer: String, epoch: Long, progress: Long): CommitOutcome = underCommitLock {
    if (!updateTracker.isRegistered(writer)) {
      throw new SharedStateException(s"Writer '$writer' is not registered on State '${spec.name}'.")
    }
    val last = lastEpoch.getOrElse(writer, -1L)
    if (epoch <= last) {
      staging.remove((writer, epoch))
      CommitOutcome(alreadyCommitted = true, 0, 0, u)
    } else {
      val tasks = staging.remove((writer, epoch))
      var accepted = 0
      var rejected = 0
      if (tasks != null) {
        val uNow = u
        // Tasks in id order, so ties at one (key, timestamp) resolve the same way on every run.
        tasks.asScala.toSeq.sortBy(_._1).foreach { case (_, batch) =>
          var i = 0
          while (i < batch.size) {
            val t = batch.times(i)
            if (t < uNow) {
              rejectedLog.add(RejectedUpdate(batch.keys(i), t, batch.values(i), RejectedUpdate.Late, writer, epoch, uNow))
              rejected += 1
            } else {
              val key = new Key(batch.keys(i))
              partitionOf(key).stage(key, t, batch.values(i))
              accepted += 1
            }
            i += 1
          }
          batch.rejected.foreach { r => rejectedLog.add(r.copy(writer = writer, epoch = epoch, updateProgressAtArrival = uNow)) }
          rejected += batch.rejected.length
        }
      }
      // Epochs older than this one that never committed were aborted attempts: drop their staging.
      staging.keySet.asScala.filter { case (w, e) => w == writer && e < epoch }.foreach(staging.remove)
      lastEpoch(writer) = epoch
      val current = updateTracker.progressOf(writer).get
      updateTracker.report(writer, math.max(current, progress))
      val stats = writerStats.computeIfAbsent(writer, _ => new WriterStats)
      stats.accepted.addAndGet(accepted)
      stats.rejected.addAndGet(rejected)
      publishProgress(updateTracker.current)
      CommitOutcome(alreadyCommitted = false, accepted, rejected, u)
    }
  }

  /** A writer that has stopped for good no longer holds U back. */
  def finishWriter(writer: String): Unit = underCommitLock {
    updateTracker.finish(writer)
    publishProgress(updateTracker.current)
  }

  /** Read-committed `latest`: the newest pair with timestamp <= t, answered only when t < U. */
  def fetchLatest(key: Key, t: Long): FetchAnswer = {
    if (t >= u) FetchAnswer.NotYet
    else {
      val set = partitionOf(key).get(key)
      if (set == null) FetchAnswer.Absent
      else {
        val i = set.latestIndex(t)
        if (i < 0) FetchAnswer.Absent else FetchAnswer.Found(set.timeAt(i), set.valueAt(i))
      }
    }
  }

  /** Rejected and late updates, oldest first. */
  def rejectedUpdates: Seq[RejectedUpdate] = rejectedLog.asScala.toSeq

  def metrics: StateMetrics = {
    val stats = writerStats.asScala.map { case (w, s) => w -> (s.accepted.get, s.rejected.get) }.toMap
    StateMetrics(
      name = spec.name,
      updateProgress = u,
      keys = parts.map(_.keyCount.toLong).sum,
      bytesHeld = parts.map(_.bytesHeld).sum,
      updatesApplied = parts.map(_.updatesApplied).sum,
      updatesStaged = underCommitLock(parts.map(_.stagedCount.toLong).sum),
      updatesRejected = rejectedLog.size.toLong,
      writers = underCommitLock(updateTracker.reporters),
      writerCounts = stats)
  }

  // Applies what the new U makes final before publishing it (see the class comment).
  private def publishProgress(newU: Long): Unit = {
    if (newU > u) parts.foreach(_.applyBefore(newU))
    u = newU
  }

  private def underCommitLock[T](body: => T): T = {
    commitLock.lock()
    try body finally commitLock.unlock()
  }
}

object State {
  final case class CommitOutcome(alreadyCommitted: Boolean, accepted: Int, rejected: Int, updateProgress: Long)

  private final class WriterStats {
    val accepted = new AtomicLong()
    val rejected = new AtomicLong()
  }
}
