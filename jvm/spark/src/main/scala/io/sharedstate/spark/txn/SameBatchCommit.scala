package io.sharedstate.spark.txn

import io.sharedstate.core.txn.TransactionOutcome
import scala.collection.mutable

/**
 * One micro-batch per outcome: the last task of a batch to stage its transactions commits the
 * batch's epoch on the group right away, and emits the outcomes that commit made final.
 *
 * Without it an outcome takes two batches: batch B stages the events, the epoch is committed once
 * Spark reports B's progress, and only then does U pass them, so the next batch (run by the tick U's
 * step makes) emits them. Once every task of B has staged, nothing more can join the epoch, and its
 * progress (the largest event time the tasks saw, minus the lateness) is known, so the commit need
 * not wait: when this writer holds U back, its own progress makes the outcomes final in B.
 *
 * Exactly once: what B emits stays fixed. B's bound (fixed by its first task, before the commit)
 * is shared among the tasks as before; the range the commit added, from that bound's `until` to U
 * after the commit, is emitted whole by the task that committed, and the next batch's bound starts
 * at the new U ([[TransactionRuns.commitInBatch]]). A retried task, or a batch evaluated again (a
 * foreachBatch reading it twice), finds the commit recorded and emits the same rows: the committing
 * task its range, the others nothing more. The commit is skipped (the epoch is committed when B's
 * progress is reported, as without this) when a batch's tasks did not all run, or the writer's
 * previous epoch is not committed yet (the first batch after a restart), or the group has a durable
 * member: there a commit must follow Spark's commit of the batch, because a new driver resumes from
 * the staged log and the checkpoint's bounds as of Spark's last committed batch (TransactionRuns).
 */
private[sharedstate] object SameBatchCommit {

  /**
   * A batch's tasks that staged so far and the largest event time they saw; once all did, whether the
   * commit ran (decided once: an evaluation of the batch again emits what the first did), by which task, and what it added.
   */
  private final class Batch(val tasks: Int) {
    val staged = mutable.Set.empty[Int]
    var maxEventMicros: Option[Long] = None
    var decided = false
    var committed: Option[(Int, TransactionRuns.Bound)] = None
  }

  private val batches = mutable.Map.empty[(String, String, Long), Batch]
  private val Kept = 8 // Spark re-runs only the last batch

  /**
   * The JVM system property that turns this off (`false`: every outcome waits for the batch after
   * its commit, as before): for measuring what it saves (benchmarks/transactions/README.md).
   */
  val Property = "sharedstate.transactions.sameBatchCommit"
  private def enabled: Boolean = !"false".equalsIgnoreCase(System.getProperty(Property))

  /**
   * Task `part` of `tasks` of `batch` staged its transactions, whose largest event time is `maxEventMicros`.
   * Returns the outcomes the task emits besides its share of the batch's bound: the range its commit
   * made final when it is the committing task, none otherwise.
   */
  def staged(query: String, node: TransactionRuns.Node, batch: Long, part: Int, tasks: Int,
      maxEventMicros: Option[Long]): Seq[TransactionOutcome] = {
    val added = synchronized {
      val b = batches.getOrElseUpdate((query, node.name, batch), new Batch(tasks))
      batches.remove((query, node.name, batch - Kept))
      if (!b.decided) {
        b.staged += part
        b.maxEventMicros = (b.maxEventMicros ++ maxEventMicros).maxOption
        if (b.staged.size == b.tasks) {
          b.decided = true
          if (enabled && node.log.isEmpty)
            b.committed = TransactionRuns.commitInBatch(query, node, batch, b.maxEventMicros).map(part -> _)
        }
      }
      b.committed.collect { case (`part`, range) => range }
    }
    added.map(r => TransactionRuns.finalIn(TransactionRuns.writerId(query, node.name), r)).getOrElse(Nil)
  }
}
