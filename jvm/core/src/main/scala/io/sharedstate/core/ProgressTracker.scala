package io.sharedstate.core

import scala.collection.mutable

/**
 * A progress value (U or F) that is the minimum over registered reporters. Reports are monotone per
 * reporter; a finished reporter no longer holds the minimum back. Not thread-safe: the owning State
 * calls it under its commit lock and publishes the result through a volatile field.
 *
 * @param whenEmpty progress with no reporter at all (-infinity for a new State, +infinity once
 *                  the State was bulk-loaded with no streaming writer)
 * @param finishedToInfinity when every reporter has finished: true gives +infinity (no writer will
 *                  add anything, so every value is final); false keeps the highest progress reported
 *                  (no reader is left, so nothing newer may be compacted away for a future one)
 */
final class ProgressTracker(kind: String, private var whenEmpty: Long, finishedToInfinity: Boolean = true) {
  private val reported = mutable.LinkedHashMap.empty[String, Long]
  private val finished = mutable.Set.empty[String]
  // Paused reporters (a stopped or idle writer) are out of the minimum, but unlike finished ones they
  // never let the progress jump: with only paused reporters left it stays where it is.
  private val paused = mutable.Set.empty[String]

  def isRegistered(reporter: String): Boolean = reported.contains(reporter)
  def isActive(reporter: String): Boolean = reported.contains(reporter) && !finished(reporter) && !paused(reporter)
  def isPaused(reporter: String): Boolean = paused(reporter)
  def isFinished(reporter: String): Boolean = finished(reporter)
  def activeCount: Int = reported.size - finished.size - paused.size

  /**
   * Registers a reporter; a known reporter keeps its progress (a restarted query resumes). A new
   * reporter joins at the current frontier when there is one, so it cannot reopen final values; with
   * no committed frontier it starts at -infinity and holds the progress back until it reports.
   */
  def register(reporter: String): Unit = register(reporter, current)

  /** Registers a new reporter at `frontier` (or -infinity when it is not finite). */
  def register(reporter: String, frontier: Long): Unit = {
    if (!reported.contains(reporter)) {
      reported(reporter) = if (EventTime.isFinite(frontier)) frontier else EventTime.MinusInfinity
    }
    finished -= reporter
    paused -= reporter
  }

  /** Takes a reporter out of the minimum until it registers again (which keeps its progress). */
  def pause(reporter: String): Unit = if (reported.contains(reporter) && !finished(reporter)) paused += reporter

  def report(reporter: String, progress: Long): Unit = {
    val prev = reported.getOrElse(reporter,
      throw new SharedStateException(s"$kind reporter '$reporter' is not registered."))
    if (progress < prev) {
      throw new SharedStateException(s"$kind progress of '$reporter' cannot go back: it was " +
        s"${EventTime.show(prev)} and ${EventTime.show(progress)} was reported.")
    }
    reported(reporter) = progress
  }

  def progressOf(reporter: String): Option[Long] = reported.get(reporter)

  def finish(reporter: String): Unit = if (reported.contains(reporter)) { finished += reporter; paused -= reporter }

  def deregister(reporter: String): Unit = { reported -= reporter; finished -= reporter; paused -= reporter }

  def setWhenEmpty(progress: Long): Unit = whenEmpty = progress

  def current: Long = {
    var min = Long.MaxValue
    var any = false
    reported.foreach { case (r, p) => if (!finished(r) && !paused(r)) { any = true; if (p < min) min = p } }
    if (any) min
    else if (paused.nonEmpty) EventTime.MinusInfinity // stays: the State's progress never goes back
    else if (reported.isEmpty) whenEmpty
    else if (finishedToInfinity) EventTime.PlusInfinity
    else reported.values.max
  }

  def reporters: Map[String, Long] = reported.toMap

  /** Every reporter in registration order, for a [[ProgressImage]]. */
  def image: Seq[ProgressImage.Reporter] =
    reported.toSeq.map { case (r, p) => ProgressImage.Reporter(r, p, paused(r), finished(r)) }

  def whenEmptyProgress: Long = whenEmpty

  /** Replaces every reporter with those of an image (a new holder of a State's partitions). */
  def restore(reporters: Seq[ProgressImage.Reporter], whenEmptyProgress: Long): Unit = {
    reported.clear(); finished.clear(); paused.clear()
    reporters.foreach { r =>
      reported(r.id) = r.progress
      if (r.finished) finished += r.id
      if (r.paused) paused += r.id
    }
    whenEmpty = whenEmptyProgress
  }
}
