package io.sharedstate.core.txn

import io.sharedstate.core.{EventTime, State, UpdateBatch}
import java.util.concurrent.{Executor, ForkJoinPool}
import scala.collection.mutable
import scala.util.Random

/**
 * Drives one workload through a TransactionGroup the way streaming writers would (several writers,
 * random epoch boundaries, random task split, tasks staged in random order with retries that replace
 * an earlier attempt, replayed commits, progress lagging the events so some arrive late) and the same
 * admitted events through [[SequentialTransactions]]. Lateness and U are computed here, independently
 * of the engine, from the progress the writers report.
 *
 * @param threads 0 = the committing thread only, else a fork/join pool of that many threads
 */
final class TxnModelRun(workload: TxnWorkload, seed: Long, threads: Int) {
  import TxnModelRun.Result
  private val rnd = new Random(seed * 7919 + threads)

  def run(): Result = {
    val pool = if (threads == 0) null else new ForkJoinPool(threads)
    try drive(pool)
    finally if (pool != null) pool.shutdownNow()
  }

  private def drive(pool: Executor): Result = {
    val states = workload.states.map(new State(_))
    // Every round in parallel parts when there is a pool (the committing thread alone is threads 0 and 1).
    val group = new TransactionGroup(s"g_${workload.name}", states, pool, math.max(1, threads), parallelFrom = 0L)
    val oracle = new SequentialTransactions(workload.states)
    val events = workload.events(seed)
    val writers = Vector.tabulate(1 + rnd.nextInt(3))(i => s"w$i")
    writers.foreach(group.registerWriter)
    // Each writer's events, in arrival order.
    val byWriter = mutable.LinkedHashMap(writers.map(w => w -> mutable.Queue.empty[TxnEvent]): _*)
    events.foreach(e => byWriter(writers(rnd.nextInt(writers.length))) += e)
    val progress = mutable.HashMap(writers.map(_ -> EventTime.MinusInfinity): _*)
    val maxSeen = mutable.HashMap(writers.map(_ -> EventTime.MinusInfinity): _*)
    val epochs = mutable.HashMap(writers.map(_ -> 0L): _*)
    var uModel = EventTime.MinusInfinity
    var lateTxns = 0
    var lateUpdates = 0
    var uChecks = 0
    val engineOut = mutable.ArrayBuffer.empty[TransactionOutcome]
    val slack = 1 + rnd.nextInt(40)

    while (byWriter.values.exists(_.nonEmpty)) {
      val w = rnd.shuffle(writers.filter(byWriter(_).nonEmpty)).head
      val epoch = epochs(w)
      val n = 1 + rnd.nextInt(math.max(1, 2 + rnd.nextInt(60)))
      val batch = (0 until n).flatMap(_ => if (byWriter(w).nonEmpty) Some(byWriter(w).dequeue()) else None)
      val tasks = 1 + rnd.nextInt(4)
      val perTask = batch.groupBy(_ => rnd.nextInt(tasks))
      // Stage: tasks in random order, some twice (a first attempt with part of the rows, replaced).
      rnd.shuffle((0 until tasks).toList).foreach { task =>
        val mine = perTask.getOrElse(task, IndexedSeq.empty)
        if (rnd.nextInt(5) == 0) stageTask(group, states, w, epoch, task, mine.take(mine.length / 2))
        stageTask(group, states, w, epoch, task, mine)
      }
      batch.foreach(e => maxSeen(w) = math.max(maxSeen(w), e.time))
      val newProgress = math.max(progress(w), maxSeen(w) - slack - rnd.nextInt(20))
      // The model: the epoch's rows in commit order (tasks by id, each in order), late below U now.
      (0 until tasks).foreach { task =>
        var seq = 0
        perTask.getOrElse(task, IndexedSeq.empty).foreach {
          case TxnEvent.Plain(s, k, t, v) =>
            if (t < uModel) lateUpdates += 1 else oracle.plain(s, k, t, v)
          case TxnEvent.Txn(txn) =>
            val id = TransactionId(w, epoch, task, seq)
            seq += 1
            if (txn.time < uModel) lateTxns += 1 else oracle.txn(id, txn)
        }
      }
      val out = group.commitEpoch(w, epoch, newProgress)
      assert(!out.alreadyCommitted)
      progress(w) = newProgress
      uModel = math.max(uModel, writers.map(progress).min)
      if (rnd.nextInt(6) == 0) assert(group.commitEpoch(w, epoch, newProgress).alreadyCommitted) // a replay
      assert(group.updateProgress == uModel, s"group U ${group.updateProgress} != model U $uModel")
      states.foreach(s => assert(s.updateProgress == uModel, s"State ${s.name} U ${s.updateProgress} != $uModel"))
      uChecks += 1
      val drained = group.drainOutcomes()
      drained.foreach(o => assert(o.time < uModel, s"outcome at ${o.time} drained before final (U=$uModel)"))
      engineOut ++= drained
      epochs(w) = epoch + 1
    }
    writers.foreach(group.finishWriter)
    engineOut ++= group.drainOutcomes()
    val oracleOut = oracle.run()
    val engineHistories = states.flatMap { s =>
      (0 until s.partitionCount).flatMap { p =>
        val b = mutable.ArrayBuffer.empty[((String, Seq[Byte]), Seq[(Long, Seq[Byte])])]
        s.partition(p).foreachEntry { (k, set) =>
          if (set.size > 0)
            b += ((s.name, k.bytes.toSeq) -> (0 until set.size).map(i => (set.timeAt(i), set.valueAt(i).toSeq)))
        }
        b
      }
    }.toMap
    assert(group.lateCount == lateTxns, "late transactions")
    assert(states.map(_.rejectedUpdates.count(_.reason == "late")).sum == lateUpdates, "late updates")
    Result(engineOut.toIndexedSeq, oracleOut, engineHistories, oracle.histories, lateTxns, lateUpdates, uChecks,
      oracleOut.size, oracleOut.count(_.aborted))
  }

  private def stageTask(group: TransactionGroup, states: Seq[State], w: String, epoch: Long, task: Int,
      rows: IndexedSeq[TxnEvent]): Unit = {
    val txns = new TransactionBatch
    val updates = states.map(s => s.name -> new UpdateBatch).toMap
    rows.foreach {
      case TxnEvent.Plain(s, k, t, v) => updates(s).add(k, t, v)
      case TxnEvent.Txn(txn) => txns.add(txn)
    }
    group.stage(w, epoch, task, txns)
    states.foreach(s => s.stage(w, epoch, task, updates(s.name)))
  }
}

object TxnModelRun {
  final case class Result(
      engineOutcomes: IndexedSeq[TransactionOutcome],
      oracleOutcomes: IndexedSeq[TransactionOutcome],
      engineHistories: Map[(String, Seq[Byte]), Seq[(Long, Seq[Byte])]],
      oracleHistories: Map[(String, Seq[Byte]), Seq[(Long, Seq[Byte])]],
      lateTxns: Int,
      lateUpdates: Int,
      uChecks: Int,
      transactions: Int,
      aborted: Int)
}
