package io.sharedstate.spark.txn

import io.sharedstate.core.EventTime
import io.sharedstate.core.txn.{TransactionGroup, TransactionOutcome}
import java.util.concurrent.ConcurrentHashMap
import org.apache.spark.internal.Logging
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
 *  - **Outcomes.** The group hands out outcomes once ([[TransactionGroup.drainOutcomes]]); they are kept
 *    per writer until the batch after the one that emitted them is decided.
 */
private[sharedstate] object TransactionRuns extends Logging {

  /** One transactional operator of a query. */
  final case class Node(name: String, group: String, latenessMicros: Long, outcomes: Boolean)

  /** What `batch` emits: the outcomes with `from <= time < until`, and the late transactions it took. */
  final case class Bound(batch: Long, from: Long, until: Long)

  private final class Run(val id: String, val query: StreamingQuery, val nodes: Seq[Node]) {
    def writer(n: Node): String = writerId(id, n.name)
    var committed: Long = -1L
    val maxSeen: mutable.Map[String, Long] = mutable.Map.empty
  }

  private val runs = new ConcurrentHashMap[String, Run]()
  private val bounds = new ConcurrentHashMap[String, Bound]()
  private val lastBound = new ConcurrentHashMap[String, (Long, Long)]() // query|node -> (batch, until)
  private val buffers = new ConcurrentHashMap[String, mutable.ArrayBuffer[TransactionOutcome]]()
  // Per writer (with outcomes), the outcomes of its late transactions: (the batch that emits it, or
  // -1 until a batch of the writer fixes its bound and takes it, the outcome).
  private val lateBuffers = new ConcurrentHashMap[String, mutable.ArrayBuffer[(Long, TransactionOutcome)]]()
  // Batches of a node older than this are forgotten (Spark re-runs only the last one).
  private val Kept = 8

  def writerId(query: String, node: String): String = s"txn:$node:$query"

  /** On the stream thread, before the first batch: registers (or resumes) each node's writer. */
  def started(queryId: String, query: StreamingQuery, nodes: Seq[Node]): Unit = {
    val run = new Run(queryId, query, nodes)
    nodes.foreach { n =>
      if (n.outcomes) {
        buffers.putIfAbsent(run.writer(n), mutable.ArrayBuffer.empty)
        lateBuffers.putIfAbsent(run.writer(n), mutable.ArrayBuffer.empty)
      }
      TransactionGroups.named(n.group).registerWriter(run.writer(n))
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
      run.query.recentProgress.filter(_.batchId > run.committed).sortBy(_.batchId).foreach { p =>
        run.nodes.foreach { n =>
          Option(p.observedMetrics.get(n.name)).flatMap(m => Option(m.getAs[Any](TransactionRows.MaxEventMicros)))
            .foreach(m =>
              run.maxSeen(n.name) = math.max(run.maxSeen.getOrElse(n.name, Long.MinValue), m.asInstanceOf[Long]))
          val group = TransactionGroups.named(n.group)
          val writer = run.writer(n)
          val current = group.states.head.writerProgress(writer).getOrElse(EventTime.MinusInfinity)
          val watermark = run.maxSeen.get(n.name).map(_ - n.latenessMicros).getOrElse(EventTime.MinusInfinity)
          val out = group.commitEpoch(writer, p.batchId, math.max(current, watermark))
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
      val group = TransactionGroups.named(node.group)
      val until = group.updateProgress // read before draining: every outcome below it is drained now
      drain(group)
      val from = Option(lastBound.get(key)).filter(_._1 < batch).map(_._2).getOrElse(EventTime.MinusInfinity)
      lastBound.put(key, (batch, until))
      Option(buffers.get(writerId(query, node.name))).foreach(b => b.synchronized(b.filterInPlace(_.time >= from)))
      // The late transactions decided since the previous bound are this batch's (a late one's time
      // may be below `from`: its outcome goes by batch, not by time).
      Option(lateBuffers.get(writerId(query, node.name))).foreach(b =>
        b.synchronized {
          b.mapInPlace { case (taken, o) => (if (taken < 0) batch else taken, o) }
          b.filterInPlace(_._1 >= batch) // Spark re-runs only the last batch, which is this one or later
        })
      bounds.remove(s"$key|${batch - Kept}")
      val bound = Bound(batch, from, until)
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
        val group = TransactionGroups.named(node.group)
        val until = group.updateProgress // read before draining, as in bound
        drain(group)
        lastBound.put(key, (batch, math.max(until, base.until)))
        Bound(batch, base.until, math.max(until, base.until))
      }
    }

  /** The outcomes of `writer` with `range.from <= time < range.until`, in (time, id) order. */
  def finalIn(writer: String, range: Bound): Seq[TransactionOutcome] =
    Option(buffers.get(writer)).map(b =>
      b.synchronized(b.filter(o => o.time >= range.from && o.time < range.until)
          .toVector)).getOrElse(Vector.empty).sorted(TransactionOutcome.Order)

  /** The query's outcomes a batch with `bound` emits, in (time, id) order: final ones and late ones. */
  def outcomes(writer: String, bound: Bound): Seq[TransactionOutcome] = {
    val done = Option(buffers.get(writer)).map(b =>
      b.synchronized(b.filter(o => o.time >= bound.from && o.time < bound.until).toVector)).getOrElse(Vector.empty)
    val late = Option(lateBuffers.get(writer)).map(b =>
      b.synchronized(b.collect { case (batch, o) if batch == bound.batch => o }.toVector)).getOrElse(Vector.empty)
    (done ++ late).sorted(TransactionOutcome.Order)
  }

  // Outcomes come out of a group once: each goes to its writer's buffer (none: no query wants it).
  // A late transaction's outcome is aborted with reason `late`, with no reads (none was made).
  private def drain(group: TransactionGroup): Unit = synchronized {
    group.drainOutcomes().groupBy(_.id.writer).foreach { case (writer, os) =>
      Option(buffers.get(writer)).foreach(b => b.synchronized(b ++= os))
    }
    group.drainLate().groupBy(_.id.writer).foreach { case (writer, rs) =>
      Option(lateBuffers.get(writer)).foreach(b =>
        b.synchronized(b ++= rs.map(r =>
          (-1L, TransactionOutcome(r.id, r.time, committed = false, IndexedSeq.empty, r.reason, r.payload)))))
    }
  }

  /** Queries running now (for the listener). */
  def running: Set[String] = runs.keySet.asScala.toSet
}
