package io.sharedstate.spark.txn

import io.sharedstate.spark.changes.QueryListeners
import io.sharedstate.spark.durable.DurableStates

import io.sharedstate.core.EventTime
import io.sharedstate.core.txn.{RejectedTransaction, TransactionGroup, TransactionOutcome}
import java.util.concurrent.ConcurrentHashMap
import org.apache.spark.internal.Logging
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.execution.streaming.runtime.StreamingQueryWrapper
import org.apache.spark.sql.streaming.StreamingQuery
import scala.collection.mutable
import scala.jdk.CollectionConverters._

/**
 * The driver's side of running transactional queries (local mode: tasks run in this JVM and call it
 * directly). Per query, from its start ([[started]]) to its stop ([[stopped]]):
 *
 *  - **Writer.** Each transactional operator of the query is a writer of its group's States,
 *    `txn:<name>:<query id>` (a restart from the checkpoint keeps the query id, so it resumes the writer). It holds U at
 *    its watermark: the latest event time seen minus the lateness.
 *  - **Commit.** Epoch = micro-batch. Tasks stage their transactions as they run; the epoch is committed
 *    on the group once Spark has committed the batch: after the batch's progress is reported (the
 *    listener, asynchronously) or, at the latest, before the next batch decides anything ([[catchUp]],
 *    from `recentProgress`, in batch order; a commit is idempotent). Its progress is the watermark from
 *    the batch's observed maximum event time. Or sooner, in the batch, by its last task ([[SameBatchCommit]]).
 *  - **Bounds.** What a batch emits is fixed once, when its first task asks ([[bound]]): the outcomes
 *    of the query's transactions with `from <= time < until`, where `until` is the group's U then and
 *    `from` the previous batch's `until`. U only grows, and each outcome is final once U passes it, so
 *    every outcome is emitted by exactly one batch, and a re-run of a batch (same id) emits the same.
 *  - **Outcomes.** The group hands each writer's outcomes out once, as it decides them ([[Decisions]]);
 *    they are kept per writer ([[WriterOutcomes]]) until the batch after the one that emitted them is
 *    decided. With a durable member they are kept in the query's checkpoint as they are decided, and so
 *    is each batch's bound as it is fixed ([[TransactionOutcomeLog]]): a new driver emits what no
 *    committed batch emitted, and a re-run batch its kept bound.
 */
private[sharedstate] object TransactionRuns extends Logging {

  /** One transactional operator of a query; `log`: its group's staged log (a durable member), if any. */
  final case class Node(name: String, group: String, latenessMicros: Long, outcomes: Boolean,
      log: Option[StagedTransactionLog] = None)

  /**
   * What `batch` emits: the outcomes with `from <= time < until`, and the late transactions it took
   * (those its writer's records up to `decidedThrough` hold, see [[WriterOutcomes]]).
   */
  final case class Bound(batch: Long, from: Long, until: Long, decidedThrough: Long = -1L)

  private final class Run(val id: String, val query: StreamingQuery, val nodes: Seq[Node]) {
    def writer(n: Node): String = writerId(id, n.name)
    var committed: Long = -1L
    val maxSeen: mutable.Map[String, Long] = mutable.Map.empty
  }

  private val runs = new ConcurrentHashMap[String, Run]()
  private val bounds = new ConcurrentHashMap[String, Bound]()
  private val lastBound = new ConcurrentHashMap[String, (Long, Long)]() // query|node -> (batch, until)
  private val outcomesOf = new ConcurrentHashMap[String, WriterOutcomes]() // per writer with outcomes
  // Batches of a node older than this are forgotten (Spark re-runs only the last one).
  private val Kept = 8

  def writerId(query: String, node: String): String = s"txn:$node:$query"

  /**
   * On the stream thread, before the first batch: registers (or resumes) each node's writer; with a
   * staged log, gives the group back what a previous driver's group held of the writer (see
   * [[StagedTransactionLog.resume]]; in the same application it changes nothing).
   */
  def started(queryId: String, query: StreamingQuery, nodes: Seq[(Node, TransactionProgram)]): Unit = {
    // A restart in this application whose previous run's last progress and stop have not come through
    // the asynchronous listener bus yet: that run's completed batches are committed first (committing a
    // later epoch drops a writer's uncommitted earlier ones).
    if (runs.containsKey(queryId)) catchUp(queryId)
    val run = new Run(queryId, query, nodes.map(_._1))
    val execution = query match {
      case q: StreamingQueryWrapper => Some(q.streamingQuery)
      case _ => None
    }
    // The last batch Spark committed: a logged epoch above it may be cut short, and Spark runs it again.
    val sparkCommitted = execution.flatMap(_.commitLog.getLatestBatchId()).getOrElse(-1L)
    nodes.foreach { case (n, program) =>
      // First: resuming the writer below decides again. Kept in the checkpoint when the group is durable;
      // a restart in this application keeps what it holds.
      if (n.outcomes) outcomesOf.computeIfAbsent(
        run.writer(n),
        _ => {
          val kept =
            for (log <- n.log; e <- execution)
              yield TransactionOutcomeLog.of(e.resolvedCheckpointRoot, n.name,
                DurableStates.hadoopConf(e.sparkSession))
          val outcomes = new WriterOutcomes(kept)
          if (kept.isDefined) {
            val resumed = outcomes.resume(sparkCommitted)
            val key = s"$queryId|${n.name}"
            resumed.foreach(b => bounds.put(s"$key|${b.batch}", b))
            resumed.lastOption.foreach(b => lastBound.put(key, (b.batch, b.until)))
          }
          outcomes
        }
      )
      val group = TransactionGroups.named(n.group)
      group.registerWriter(run.writer(n))
      n.log.foreach { log =>
        // At the application's end the last commits come before the roots' leases are released: one
        // member committed and another refused would leave the members a step apart.
        DurableStates.beforeLeasesRelease("transactions", () => running.foreach(catchUp))
        val width = program.eventSchema.length
        val resumed = StagedTransactionLog.resume(log, group, run.writer(n), sparkCommitted,
          { (time, bytes) =>
            val event = new UnsafeRow(width)
            event.pointTo(bytes, bytes.length)
            program.transaction(event, time)
          })
        // The batch Spark runs again may not run its plan (its sink committed it): its events' largest
        // time is its watermark's, as its observed metric would have said.
        resumed.restagedMaxTime.foreach(m => run.maxSeen(n.name) = m)
        logInfo(s"Transactions ${n.name}: resumed ${run.writer(n)} from ${log.directory}: ${resumed.restored} " +
          s"transaction(s) waiting again, ${resumed.recommitted} epoch(s) committed again, ${resumed.restaged} " +
          s"staged again for batch ${sparkCommitted + 1}")
      }
    }
    runs.put(queryId, run)
  }

  /** When the query stops: commits what Spark committed, then pauses the writers (they stop holding U). */
  def stopped(queryId: String): Unit = Option(runs.get(queryId)).foreach { run =>
    catchUp(queryId)
    runs.remove(queryId)
    run.nodes.foreach(n => TransactionGroups.named(n.group).pauseWriter(run.writer(n)))
  }

  /** Commits every batch of the query that completed and is not committed yet, in batch order. */
  def catchUp(queryId: String): Unit = Option(runs.get(queryId)).foreach { run =>
    run.synchronized {
      QueryListeners.ranBatches(run.query, run.committed).foreach { p =>
        run.nodes.foreach { n =>
          Option(p.observedMetrics.get(n.name)).flatMap(m => Option(m.getAs[Any](TransactionRows.MaxEventMicros)))
            .foreach(m =>
              run.maxSeen(n.name) = math.max(run.maxSeen.getOrElse(n.name, Long.MinValue), m.asInstanceOf[Long]))
          val group = TransactionGroups.named(n.group)
          val writer = run.writer(n)
          val current = group.states.head.writerProgress(writer).getOrElse(EventTime.MinusInfinity)
          val watermark = run.maxSeen.get(n.name).map(_ - n.latenessMicros).getOrElse(EventTime.MinusInfinity)
          val out = group.commitEpoch(writer, p.batchId, math.max(current, watermark))
          n.log.foreach(_.prune(writer, p.batchId, group.updateProgress))
          for (o <- Option(outcomesOf.get(writer)); log <- o.log;
            b <- Option(bounds.get(s"${run.id}|${n.name}|${p.batchId}")))
            log.emitted(b, Kept)
          logDebug(s"Transactions ${n.name}: committed epoch ${p.batchId} of $writer: $out")
        }
        run.committed = p.batchId
      }
    }
  }

  /** The bound of `batch` of `node` in `query`, fixed by the first task that asks (see the object's doc). */
  def bound(query: String, node: Node, batch: Long): Bound = synchronized {
    val key = s"$query|${node.name}"
    Option(bounds.get(s"$key|$batch")).getOrElse {
      catchUp(query)
      // Every outcome below U is handed out before U is published (see Decisions).
      val until = TransactionGroups.named(node.group).updateProgress
      val from = Option(lastBound.get(key)).filter(_._1 < batch).map(_._2).getOrElse(EventTime.MinusInfinity)
      lastBound.put(key, (batch, until))
      // The late transactions decided since the previous bound are this batch's (a late one's time
      // may be below `from`: its outcome goes by batch, not by time).
      val writer = Option(outcomesOf.get(writerId(query, node.name)))
      val bound = Bound(batch, from, until, writer.map(_.take(batch, from)).getOrElse(-1L))
      writer.flatMap(_.log).foreach(_.writeBound(bound)) // before any task emits
      bounds.remove(s"$key|${batch - Kept}")
      bounds.put(s"$key|$batch", bound)
      bound
    }
  }

  /**
   * [[SameBatchCommit]]: commits `batch` of `node` now, before Spark reports it, with the progress its
   * tasks' largest event time gives; returns the range of times the commit made final beyond the
   * batch's bound (the next batch's bound starts at its end). None, and nothing done, unless the
   * query has this one transactional operator, its bound for `batch` is fixed, and every earlier
   * batch of this run is committed (the first batch of a restarted run waits for its progress).
   */
  def commitInBatch(query: String, node: Node, batch: Long, maxEventMicros: Option[Long]): Option[Bound] =
    synchronized {
      val key = s"$query|${node.name}"
      for {
        run <- Option(runs.get(query)) if run.nodes == Seq(node)
        base <- Option(bounds.get(s"$key|$batch"))
        _ <- run.synchronized {
          Option.when(run.committed == batch - 1) {
            maxEventMicros.foreach(m => run.maxSeen(node.name) = math.max(run.maxSeen.getOrElse(node.name, m), m))
            val group = TransactionGroups.named(node.group)
            val writer = run.writer(node)
            val current = group.states.head.writerProgress(writer).getOrElse(EventTime.MinusInfinity)
            val watermark = run.maxSeen.get(node.name).map(_ - node.latenessMicros).getOrElse(EventTime.MinusInfinity)
            group.commitEpoch(writer, batch, math.max(current, watermark))
            run.committed = batch
          }
        }
      } yield {
        // Every outcome below U is handed out before U is published (see Decisions).
        val until = math.max(TransactionGroups.named(node.group).updateProgress, base.until)
        lastBound.put(key, (batch, until))
        base.copy(from = base.until, until = until)
      }
    }

  /** The outcomes of `writer` with `range.from <= time < range.until`, in (time, id) order. */
  def finalIn(writer: String, range: Bound): Seq[TransactionOutcome] =
    Option(outcomesOf.get(writer)).map(_.finalsIn(range.from, range.until)).getOrElse(Vector.empty)

  /** The query's outcomes a batch with `bound` emits, in (time, id) order: final ones and late ones. */
  def outcomes(writer: String, bound: Bound): Seq[TransactionOutcome] =
    Option(outcomesOf.get(writer)).map(_.of(bound)).getOrElse(Vector.empty)

  /**
   * The groups' hook ([[TransactionGroup.onDecided]]): each outcome goes to its writer's outcomes as
   * the group decides it, before the step is journaled (a writer without outcomes drops it). A late
   * transaction's outcome is aborted with reason `late`, with no reads (none was made).
   */
  object Decisions extends TransactionGroup.Decided {
    override def decided(outcomes: IndexedSeq[TransactionOutcome], late: IndexedSeq[RejectedTransaction]): Unit = {
      val lateOutcomes =
        late.map(r => TransactionOutcome(r.id, r.time, committed = false, IndexedSeq.empty, r.reason, r.payload))
      (outcomes.map(_.id.writer) ++ lateOutcomes.map(_.id.writer)).distinct.foreach { writer =>
        Option(outcomesOf.get(writer)).foreach(_.add(outcomes.filter(_.id.writer == writer),
            lateOutcomes.filter(_.id.writer == writer)))
      }
    }
  }

  /** Queries running now (for the listener). */
  def running: Set[String] = runs.keySet.asScala.toSet
}
