package io.sharedstate.spark.durable

import io.sharedstate.core.{EventTime, GroupAdvance, JournalCommit, RejectedUpdate, State, StateJournal, UpdateBatch}
import io.sharedstate.core.txn.{
  RandomMixWorkload,
  Transaction,
  TransactionBatch,
  TransactionGroup,
  TransactionOutcome,
  TxnEvent
}
import io.sharedstate.spark.txn.{GroupStepLog, StagedTransactionLog}
import java.nio.file.Files
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.spark.util.SerializableConfiguration
import org.scalatest.funsuite.AnyFunSuite
import scala.collection.mutable
import scala.util.Random

/**
 * Durable members of a transaction group: each round that applies transactions journals the pairs
 * they put, so a member rebuilt alone from its tables (the snapshots and the changelog after them, as
 * a new driver does) equals the member before, plain updates folded on top of the transactions'
 * effects included.
 */
class TransactionJournalSuite extends AnyFunSuite {
  private val conf = ForkFreeRawLocalFileSystem.configure(new Configuration()) // as the plugin's own are
  private val workload = new RandomMixWorkload(n = 240, keys = 12) // States with rules sum, replace, max

  /**
   * The group's members, each durable under its own directory, written as the sink and the txn operator
   * do: plain updates as changelog files with their epoch, transactions staged per task and kept in the
   * group's staged log (an event is its index in `all`). [[restart]] drops the group and its States as a
   * killed driver does and opens them again from the tables and the staged log.
   */
  private final class DurableGroup(seed: Long, all: IndexedSeq[TxnEvent]) {
    private val dir = new Path(Files.createTempDirectory("txn-journal-").toString)
    private val rnd = new Random(seed)
    val tables: Map[String, OwnedTables] = workload.states.map { s =>
      s.name -> new OwnedTables(new Path(dir, s.name), conf, "txn-journal-suite")
    }.toMap
    private val targets = workload.states.map(s => s.name -> tables(s.name).log.target(s.partitions)).toMap
    val log = StagedTransactionLog.under(dir.toString, "mix", new SerializableConfiguration(conf))
    private val steps = new GroupStepLog(log.directory, conf)
    private var opened: Seq[(State, DeltaJournal)] = Nil

    /** Arms a failure of this member's journal at its next group advance (after the members before it journaled). */
    val failAdvance: Map[String, java.util.concurrent.atomic.AtomicBoolean] =
      workload.states.map(_.name -> new java.util.concurrent.atomic.AtomicBoolean(false)).toMap

    /** The members the last open completed (a step a kill cut between their journal commits). */
    var completed: Seq[String] = Nil
    var group: TransactionGroup = null
    val outcomes = mutable.ArrayBuffer.empty[TransactionOutcome]
    private val epochs = mutable.HashMap("w" -> 0L, "p" -> 0L)
    private val progress = mutable.HashMap("w" -> EventTime.MinusInfinity, "p" -> EventTime.MinusInfinity)
    open()

    def states: Seq[State] = opened.map(_._1)
    private def plainOnly: State = states.head // a plain writer of one member holds the whole group back

    private def open(): Unit = {
      opened = workload.states.map { spec =>
        val t = tables(spec.name)
        val s = new State(spec)
        val start = StateRecovery.replay(s, t.log, Some(t.snapshots), Some(t.rejected))
        val journal = new DeltaJournal(spec.name, t.log, targets(spec.name), t.rejected, start.nextSeq,
          start.version, t.lease)
        s.attachJournal(new FailingJournal(journal, failAdvance(spec.name)))
        (s, journal)
      }
      plainOnly.registerWriter("p")
      group = new TransactionGroup("mix", states)
      completed = group.completeStep(steps.last)
      group.recordSteps(steps)
      StagedTransactionLog.holdForResume(log, group) // as TransactionGroups.of does
      group.registerWriter("w")
    }

    /** A killed driver's States and group are gone; the new ones come from the tables and the staged log. */
    def restart(sparkCommitted: Long): StagedTransactionLog.Resumed = {
      outcomes ++= group.drainOutcomes()
      open()
      val resumed = StagedTransactionLog.resume(log, group, "w", sparkCommitted, (_, bytes) => txnAt(bytes))
      outcomes ++= group.drainOutcomes()
      resumed
    }

    private def txnAt(bytes: Array[Byte]): Transaction =
      all(java.nio.ByteBuffer.wrap(bytes).getInt) match {
        case TxnEvent.Txn(txn) => txn
        case other => fail(s"not a transaction: $other")
      }

    /** Runs `events` as epochs of both writers, each with a progress some way behind its largest time. */
    def run(events: Seq[(TxnEvent, Int)]): Unit = {
      var rest = events
      while (rest.nonEmpty) {
        val (now, later) = rest.splitAt(1 + rnd.nextInt(25))
        rest = later
        val (toP, toW) = now.partition {
          case (TxnEvent.Plain(s, _, _, _), _) => s == plainOnly.name && rnd.nextBoolean()
          case _ => false
        }
        commit("w", toW)
        if (toP.nonEmpty || rnd.nextInt(3) == 0) commit("p", toP)
      }
    }

    /**
     * One epoch of `w`: its transactions staged by two tasks (each logged), its plain updates with their
     * files. `holdProgress`: the writer's progress stays; `commitIt` false: staged and logged, never
     * committed (the driver dies before the group's commit).
     */
    def commit(w: String, events: Seq[(TxnEvent, Int)], holdProgress: Boolean = false,
        commitIt: Boolean = true, progressTo: Option[Long] = None): Unit = {
      val epoch = epochs(w)
      val tasks = IndexedSeq.fill(2)((new TransactionBatch, mutable.ArrayBuffer.empty[(Long, Array[Byte])]))
      val updates = states.map(s => s.name -> new UpdateBatch).toMap
      events.foreach {
        case (TxnEvent.Plain(s, k, t, v), _) => updates(s).add(k, t, v)
        case (TxnEvent.Txn(txn), i) =>
          val (batch, logged) = tasks(rnd.nextInt(2))
          batch.add(txn)
          logged += ((txn.time, java.nio.ByteBuffer.allocate(4).putInt(i).array()))
      }
      val newProgress = progressTo.getOrElse(
        if (holdProgress) progress(w) else (progress(w) +: events.map(_._1.time - 5 - rnd.nextInt(15))).max)
      try commitEpoch(w, epoch, tasks, updates, newProgress, commitIt)
      finally {
        progress(w) = newProgress
        epochs(w) = epoch + 1
      }
    }

    private def commitEpoch(w: String, epoch: Long,
        tasks: IndexedSeq[(TransactionBatch, mutable.ArrayBuffer[(Long, Array[Byte])])],
        updates: Map[String, UpdateBatch], newProgress: Long, commitIt: Boolean): Unit = {
      if (w == "w") {
        tasks.zipWithIndex.foreach { case ((batch, logged), task) =>
          group.stage(w, epoch, task, batch)
          log.writeTask(w, epoch, task, logged.toSeq)
        }
        val written = states.map { s =>
          s.stage(w, epoch, 0, updates(s.name))
          s.name -> targets(s.name).writeTask(w, epoch, 0, updates(s.name))
        }.toMap
        if (commitIt) {
          group.commitEpoch(w, epoch, newProgress, payloads = written)
          log.prune(w, epoch, group.updateProgress)
        }
      } else {
        plainOnly.stage(w, epoch, 0, updates(plainOnly.name))
        val files = targets(plainOnly.name).writeTask(w, epoch, 0, updates(plainOnly.name))
        plainOnly.commitEpoch(w, epoch, newProgress, payload = files)
      }
      outcomes ++= group.drainOutcomes()
    }

    /** The next epoch of `w`. */
    def epochOf(w: String): Long = epochs(w)

    /**
     * Spark runs `epoch` of `w` again after a restart but not its plan (its sink committed the batch before
     * the kill): no task stages or logs, the epoch is committed at `progressTo`.
     */
    def rerunSkipped(w: String, epoch: Long, progressTo: Long): Unit = {
      group.commitEpoch(w, epoch, progressTo)
      log.prune(w, epoch, group.updateProgress)
      outcomes ++= group.drainOutcomes()
    }

    /** The transactional writer's progress: a plain writer following it lets U move. */
    def progressOf(w: String): Long = progress(w)

    /** The next epoch of `w` as a kill leaves it: `events` logged by task 0 only, nothing staged or committed. */
    def logPartOfNextEpoch(events: Seq[(TxnEvent, Int)]): Long = {
      val logged = events.collect { case (TxnEvent.Txn(txn), i) =>
        (txn.time, java.nio.ByteBuffer.allocate(4).putInt(i).array())
      }
      log.writeTask("w", epochs("w"), 0, logged)
      epochs("w")
    }

    /** Every writer finishes: the last round applies every waiting transaction. */
    def finish(): Unit = {
      group.finishWriter("w")
      plainOnly.finishWriter("p")
      outcomes ++= group.drainOutcomes()
      assert(group.updateProgress == EventTime.PlusInfinity && group.waitingTransactions == 0)
    }

    def snapshot(): Unit = opened.foreach { case (s, journal) =>
      assert(new Snapshotter(SnapshotSource.local(s, journal), tables(s.name).log, tables(s.name).snapshots,
        retained = 10).round().written > 0)
    }

    /** Each member rebuilt alone from its tables, as a new driver opens it (`snapshots` = false: the changelog only). */
    def recovered(snapshots: Boolean): Seq[State] = workload.states.map { spec =>
      val s = new State(spec)
      StateRecovery.replay(s, tables(spec.name).log, Option.when(snapshots)(tables(spec.name).snapshots), None)
      s
    }
  }

  /** A member's journal that fails a group advance once armed, before recording it (a kill between two members). */
  private final class FailingJournal(journal: DeltaJournal, armed: java.util.concurrent.atomic.AtomicBoolean)
      extends StateJournal {
    override def writerRegistered(writer: String, frontier: Long): Unit = journal.writerRegistered(writer, frontier)
    override def epochCommitting(commit: JournalCommit): Unit = journal.epochCommitting(commit)
    override def writerFinished(writer: String): Unit = journal.writerFinished(writer)
    override def writerDeregistered(writer: String): Unit = journal.writerDeregistered(writer)
    override def updatesRejected(rejected: Seq[RejectedUpdate]): Unit = journal.updatesRejected(rejected)
    override def groupJoined(group: String, updateProgress: Long): Unit = journal.groupJoined(group, updateProgress)
    override def groupAdvanced(advance: GroupAdvance): Unit =
      if (armed.getAndSet(false)) throw new IllegalStateException("killed between two members' journal commits")
      else journal.groupAdvanced(advance)
  }

  /** Every key's pairs with time < `below` (deletes included). */
  private def contents(s: State, below: Long): Map[Seq[Byte], Seq[(Long, Seq[Byte])]] = {
    val pairs = mutable.HashMap.empty[Seq[Byte], Seq[(Long, Seq[Byte])]]
    (0 until s.partitionCount).foreach { p =>
      s.partition(p).foreachEntry { (k, set) =>
        val kept = (0 until set.size).filter(set.timeAt(_) < below).map(i => (set.timeAt(i), set.valueAt(i).toSeq))
        if (kept.nonEmpty) pairs(k.bytes.toSeq) = kept
      }
    }
    pairs.toMap
  }

  private def assertSame(live: Seq[State], rebuilt: Seq[State], below: Long, what: String): Unit =
    live.zip(rebuilt).foreach { case (l, r) =>
      val lp = contents(l, below)
      val rp = contents(r, below)
      assert(rp.keySet == lp.keySet, s"$what: State ${l.name}'s keys")
      lp.foreach { case (k, pairs) => assert(rp(k) == pairs, s"$what: State ${l.name} key ${k.mkString(",")}") }
    }

  test("a durable member with transactions applied, rebuilt alone from its tables, equals the member before") {
    for (seed <- 1L to 3L) {
      val events = workload.events(seed)
      val g = new DurableGroup(seed, events)
      val (first, second) = events.zipWithIndex.splitAt(events.size / 2)
      g.run(first)
      assert(g.outcomes.exists(_.committed), "transactions were applied")
      // Mid-run: U is the group's U of the journal (the live one), the same pairs below it.
      val mid = g.recovered(snapshots = false)
      mid.foreach(r => assert(r.updateProgress == g.group.updateProgress, s"seed $seed mid-run: U of ${r.name}"))
      assertSame(g.states, mid, g.group.updateProgress, s"seed $seed mid-run")
      g.snapshot()
      g.run(second)
      g.finish()
      for (snapshots <- Seq(true, false)) {
        val rebuilt = g.recovered(snapshots)
        val what = s"seed $seed, ${if (snapshots) "from the snapshots" else "from the changelog only"}"
        rebuilt.foreach(r => assert(r.updateProgress == EventTime.PlusInfinity, s"$what: U of ${r.name}"))
        assertSame(g.states, rebuilt, EventTime.PlusInfinity, what)
        if (!snapshots) g.states.zip(rebuilt).foreach { case (l, r) =>
          def failures(s: State) = s.rejectedUpdates.filter(_.reason != "late_transaction")
            .map(u => (u.key.toSeq, u.time, u.reason))
          assert(failures(r) == failures(l), s"$what: rejected updates of ${l.name}")
        }
      }
    }
  }

  test("a member recovered inside its group holds U at the group's U until it joins a group again") {
    val events = workload.events(7L)
    val g = new DurableGroup(7L, events)
    g.run(events.zipWithIndex.take(120))
    val rebuilt = g.recovered(snapshots = true)
    val a = rebuilt.head
    val held = a.updateProgress
    // Its own writer alone would move U; held, it does not (transactions may still wait in the group).
    a.reportUpdateProgress("p", 1000000L)
    assert(a.updateProgress == held)
    val again = new TransactionGroup("mix", rebuilt)
    try {
      a.reportUpdateProgress("p", 1000001L)
      assert(again.updateProgress >= held)
    } finally again.close()
  }

  test("after a restart, waiting transactions and an epoch the group never committed come back from the staged log") {
    def comparable(o: TransactionOutcome) = (o.id, o.time, o.committed, o.reason, o.reads.map(_.map(_.toSeq)))
    for (seed <- 1L to 2L) {
      val events = workload.events(seed)
      val (first, rest) = events.zipWithIndex.splitAt(events.size / 2)
      val (crashed, second) = rest.splitAt(20)
      val txnsOnly = crashed.filter(_._1.isInstanceOf[TxnEvent.Txn]) // the transactional writer's own epoch
      // The oracle: the same epochs without a restart (the epoch in question committed at the same progress).
      val reference = new DurableGroup(seed, events)
      reference.run(first)
      reference.commit("w", txnsOnly, holdProgress = true)
      reference.run(second)
      reference.finish()

      val g = new DurableGroup(seed, events)
      g.run(first)
      // Logged, and Spark committed the batch; the driver dies before the group's commit.
      g.commit("w", txnsOnly, holdProgress = true, commitIt = false)
      // The next batch was cut by the kill: one task logged, Spark never committed it (it runs it again).
      val sparkCommitted = g.logPartOfNextEpoch(second.take(10)) - 1
      val waiting = g.group.waitingTransactions
      assert(waiting > 0, s"seed $seed: transactions wait at the kill")
      val resumed = g.restart(sparkCommitted)
      assert(resumed.restored == waiting && resumed.recommitted == 1, s"seed $seed: restored $resumed of $waiting")
      assert(resumed.restaged == 10 - second.take(10).count(_._1.isInstanceOf[TxnEvent.Plain]), s"seed $seed: $resumed")
      g.run(second)
      g.finish()
      reference.states.zip(g.states).foreach { case (r, s) =>
        assert(contents(s, EventTime.PlusInfinity) == contents(r, EventTime.PlusInfinity), s"seed $seed: ${s.name}")
      }
      assert(g.outcomes.map(comparable).sortBy(_._1) == reference.outcomes.map(comparable).sortBy(_._1),
        s"seed $seed: outcomes")
      g.log.prune("w", Long.MaxValue, g.group.updateProgress)
      assert(g.log.epochs("w").isEmpty, "every epoch final: the staged log is empty")
    }
  }

  test("a kill after the sink committed a batch, before Spark did: the batch's plan is skipped, its epoch restaged") {
    def comparable(o: TransactionOutcome) = (o.id, o.time, o.committed, o.reason, o.reads.map(_.map(_.toSeq)))
    for (seed <- 1L to 3L) {
      val events = workload.events(seed)
      val (first, rest) = events.zipWithIndex.splitAt(events.size / 2)
      val (cut, second) = rest.splitAt(20)
      val txnsOnly = cut.filter(_._1.isInstanceOf[TxnEvent.Txn])
      val reference = new DurableGroup(seed, events)
      reference.run(first)
      reference.commit("w", txnsOnly)
      reference.run(second)
      reference.finish()

      val g = new DurableGroup(seed, events)
      g.run(first)
      // Every task of the batch ran and logged, and its sink committed it; the kill came before Spark's
      // commit, so no listener committed the epoch on the group.
      g.commit("w", txnsOnly, commitIt = false)
      val epoch = g.epochOf("w") - 1
      val resumed = g.restart(sparkCommitted = epoch - 1)
      assert(resumed.restaged == txnsOnly.size, s"seed $seed: $resumed")
      assert(resumed.restagedMaxTime.contains(txnsOnly.map(_._1.time).max), s"seed $seed: $resumed")
      // Spark runs the batch again; its sink skips it (already committed), so no task runs: the epoch
      // commits at the progress the batch's events give.
      g.rerunSkipped("w", epoch, g.progressOf("w"))
      g.run(second)
      g.finish()
      reference.states.zip(g.states).foreach { case (r, s) =>
        assert(contents(s, EventTime.PlusInfinity) == contents(r, EventTime.PlusInfinity), s"seed $seed: ${s.name}")
      }
      assert(g.outcomes.map(comparable).sortBy(_._1) == reference.outcomes.map(comparable).sortBy(_._1),
        s"seed $seed: outcomes")
    }
  }

  test(
    "a kill after a step was decided, before any member journaled it: U waits for the writer's logged transactions") {
    def comparable(o: TransactionOutcome) = (o.id, o.time, o.committed, o.reason, o.reads.map(_.map(_.toSeq)))
    for (seed <- 1L to 3L) {
      val events = workload.events(seed)
      val (first, rest) = events.zipWithIndex.splitAt(events.size / 2)
      val (cut, second) = rest.splitAt(30)
      val txnsOnly = cut.filter(_._1.isInstanceOf[TxnEvent.Txn])
      // The plain writer holds U below the transactional writer's progress, then its commit lets U move:
      // the step applies the transactions waiting below the new U.
      def plainHolds(d: DurableGroup): Unit = d.commit("p", Nil, holdProgress = true)
      def plainFollows(d: DurableGroup): Unit = d.commit("p", Nil, progressTo = Some(d.progressOf("w")))
      val reference = new DurableGroup(seed, events)
      reference.run(first)
      plainHolds(reference)
      reference.commit("w", txnsOnly)
      plainFollows(reference)
      reference.run(second)
      reference.finish()

      val g = new DurableGroup(seed, events)
      g.run(first)
      plainHolds(g)
      g.commit("w", txnsOnly)
      val held = g.group.updateProgress
      assert(held < g.progressOf("w"), s"seed $seed: the plain writer holds U below the transactional writer")
      // The plain writer's commit is journaled; its step decides outcomes, then the kill comes before any
      // member journals the step.
      g.failAdvance(g.states.head.name).set(true)
      val killed = intercept[IllegalStateException](plainFollows(g))
      assert(killed.getMessage.startsWith("killed"))
      val decided = g.group.drainOutcomes()
      assert(decided.nonEmpty, s"seed $seed: the cut step decided transactions")
      g.outcomes ++= decided
      g.restart(sparkCommitted = g.epochOf("w") - 1)
      assert(g.completed.isEmpty && g.states.forall(_.updateProgress >= held), s"seed $seed: ${g.completed}")
      g.run(second)
      g.finish()
      reference.states.zip(g.states).foreach { case (r, s) =>
        assert(contents(s, EventTime.PlusInfinity) == contents(r, EventTime.PlusInfinity), s"seed $seed: ${s.name}")
      }
      // The cut step's outcomes are decided again, the same (a durable caller keeps them once).
      assert(g.outcomes.map(comparable).distinct.sortBy(_._1) == reference.outcomes.map(comparable).sortBy(_._1),
        s"seed $seed: outcomes")
    }
  }

  test("a kill between two members' journal commits of one step: the restart completes the step on the others") {
    def comparable(o: TransactionOutcome) = (o.id, o.time, o.committed, o.reason, o.reads.map(_.map(_.toSeq)))
    for (seed <- 1L to 3L) {
      val events = workload.events(seed)
      val (first, rest) = events.zipWithIndex.splitAt(events.size / 3)
      val chunks = rest.grouped(12).toSeq
      val reference = new DurableGroup(seed, events)
      reference.run(first)
      def step(d: DurableGroup, c: Seq[(TxnEvent, Int)]): Unit = {
        d.commit("w", c)
        d.commit("p", Nil, progressTo = Some(d.progressOf("w"))) // the plain writer follows: U moves
      }
      chunks.foreach(c => step(reference, c))
      reference.finish()

      val g = new DurableGroup(seed, events)
      g.run(first)
      val second = g.states(1).name
      g.failAdvance(second).set(true) // the second member's next advance fails, after the first one's journaled it
      var failedAt = -1
      chunks.zipWithIndex.foreach { case (c, i) =>
        // Each commit as its own step: a commit the kill cut is not made again (its epoch is in the journals).
        Seq[() => Unit](() => g.commit("w", c), () => g.commit("p", Nil, progressTo = Some(g.progressOf("w"))))
          .foreach { commit =>
            try commit()
            catch {
              case e: IllegalStateException if failedAt < 0 && e.getMessage.startsWith("killed") =>
                failedAt = i
                g.restart(sparkCommitted = i + 1000L) // every epoch logged was committed by Spark
                assert(g.completed == g.states.drop(1).map(_.name), s"seed $seed: completed ${g.completed}")
                val us = g.states.map(_.updateProgress).distinct
                assert(us.size == 1, s"seed $seed: the members at one step after the restart: $us")
            }
          }
      }
      assert(failedAt >= 0, s"seed $seed: the armed failure happened")
      g.finish()
      assertSame(g.states, g.recovered(snapshots = false), EventTime.PlusInfinity, s"seed $seed: rebuilt alone")
      reference.states.zip(g.states).foreach { case (r, s) =>
        assert(contents(s, EventTime.PlusInfinity) == contents(r, EventTime.PlusInfinity), s"seed $seed: ${s.name}")
      }
      assert(g.outcomes.map(comparable).sortBy(_._1) == reference.outcomes.map(comparable).sortBy(_._1),
        s"seed $seed: outcomes")
    }
  }
}
