package io.sharedstate.spark.txn

import io.sharedstate.core.EventTime
import io.sharedstate.core.txn.{TransactionId, TransactionOutcome}
import scala.collection.mutable

/**
 * The outcomes of one transactional writer decided and not yet behind the batches that emit them:
 * final ones (until the batch after the one that emitted them is bound) and late ones (with the batch
 * that takes them, -1 until a batch is bound), each decision numbered (record n) and, with a `log`,
 * kept in the query's checkpoint before the group journals the step ([[TransactionOutcomeLog]]). An
 * outcome decided twice (a restart decides again what a kill cut before its step was journaled) is
 * kept once: the decision is deterministic, so its values are the same.
 */
private[sharedstate] final class WriterOutcomes(val log: Option[TransactionOutcomeLog]) {
  private val finals = mutable.ArrayBuffer.empty[TransactionOutcome]
  private val late = mutable.ArrayBuffer.empty[(Long, TransactionOutcome)]
  private val ids = mutable.HashSet.empty[TransactionId]
  private var last = -1L // the last record's number

  /** A decision of the group for this writer: kept (durably first, with a log), then held for the batches. */
  def add(newFinals: Seq[TransactionOutcome], newLate: Seq[TransactionOutcome]): Unit = synchronized {
    val (f, l) = (newFinals.filterNot(o => ids(o.id)), newLate.filterNot(o => ids(o.id)))
    if (f.nonEmpty || l.nonEmpty) {
      last += 1
      log.foreach(_.record(last, f, l))
      f.foreach(o => ids += o.id); l.foreach(o => ids += o.id)
      finals ++= f
      late ++= l.map(o => (-1L, o))
    }
  }

  /**
   * Fixes what `batch` takes: the final outcomes from `from` on stay (those below were emitted by the
   * batches before), and every late one not taken yet is the batch's. Returns the last record's number
   * (the batch's `decidedThrough`).
   */
  def take(batch: Long, from: Long): Long = synchronized {
    finals.filterInPlace { o =>
      val keep = o.time >= from; if (!keep) ids -= o.id; keep
    }
    late.mapInPlace { case (taken, o) => (if (taken < 0) batch else taken, o) }
    // Spark re-runs only the last batch, which is this one or later.
    late.filterInPlace { case (taken, o) => val keep = taken >= batch; if (!keep) ids -= o.id; keep }
    last
  }

  /** What a batch with `bound` emits, in (time, id) order: its final outcomes and its late ones. */
  def of(bound: TransactionRuns.Bound): Seq[TransactionOutcome] = synchronized {
    (finals.filter(o => o.time >= bound.from && o.time < bound.until) ++
      late.collect { case (batch, o) if batch == bound.batch => o }).toVector.sorted(TransactionOutcome.Order)
  }

  /** The final outcomes with `from <= time < until`, in (time, id) order ([[SameBatchCommit]]'s range). */
  def finalsIn(from: Long, until: Long): Seq[TransactionOutcome] = synchronized {
    finals.filter(o => o.time >= from && o.time < until).toVector.sorted(TransactionOutcome.Order)
  }

  /**
   * At a new driver's start, from the log: `committed` the last batch Spark committed, `bounds` the
   * kept bound of a batch. Holds again what no committed batch emitted: the final outcomes from the
   * committed batch's `until` on, the late ones recorded after its `decidedThrough` (those up to the next
   * batch's `decidedThrough` are that batch's, when it was bound: Spark runs it again). Returns the
   * bounds it resumes from: the committed batch's and the next one's, when kept.
   */
  def resume(committed: Long): Seq[TransactionRuns.Bound] = synchronized {
    val l = log.getOrElse(throw new IllegalStateException("Only outcomes kept in a checkpoint can be resumed."))
    val done = l.bound(committed)
    val next = l.bound(committed + 1)
    val from = done.map(_.until).getOrElse(EventTime.MinusInfinity)
    val through = done.map(_.decidedThrough).getOrElse(-1L)
    finals.clear(); late.clear(); ids.clear()
    var max = (done ++ next).map(_.decidedThrough).maxOption.getOrElse(-1L)
    l.decided.foreach { case (n, isLate, o) =>
      max = math.max(max, n)
      if (!ids(o.id)) {
        if (!isLate && o.time >= from) { finals += o; ids += o.id }
        else if (isLate && n > through) {
          late += ((if (next.exists(n <= _.decidedThrough)) committed + 1 else -1L, o)); ids += o.id
        }
      }
    }
    last = max
    (done ++ next).toSeq
  }
}
