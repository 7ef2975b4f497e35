package io.sharedstate.core.txn

import io.sharedstate.core.{EventTime, GroupAdvance, ProgressGroup, RejectedUpdate, SharedStateException, State}
import java.util.concurrent.{ConcurrentHashMap, ConcurrentLinkedQueue, Executor}
import java.util.concurrent.locks.ReentrantLock
import scala.collection.mutable
import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._

/**
 * States that transactions read and write together, and that therefore become final together.
 *
 * Creating a group joins its States: from then on they share one commit lock, and their update
 * progress is the group's: U = the minimum over the writers of every member (a writer of any member
 * holds back all of them), applied and published for all members in one step. A member's plain
 * updates (staged and committed on the State as before, rules and all) and the group's transactions
 * are applied in that step, per key in (time, tie) order: at one time a key's plain updates first
 * (arrival order), then transactions in [[TransactionId]] order, each transaction's reads of a key
 * before its writes of it. The step runs the per-key operation chains on `executor` (the common
 * fork/join pool by default, the pool States apply on; null = the committing thread), without locks
 * (see [[ChainScheduler]]), and publishes U on every member only after every chain published. A step
 * with fewer than `parallelFrom` accesses runs on the committing thread alone (see
 * [[TransactionGroup.ParallelFrom]]).
 *
 * A writer registers on the group (it is registered on every member), stages transactions per
 * (writer, epoch, task) with [[stage]] (a retry replaces the task's batch) and plain updates on the
 * members with `State.stage`, then commits the epoch with [[commitEpoch]]: a transaction below the
 * group's U then is late: it is counted ([[lateCount]]), handed out by [[drainLate]] and logged in the
 * rejected log of each member it writes; the others wait for U to pass their time. Outcomes come out, in (time, id) order, once final: [[drainOutcomes]].
 *
 * Journaled in part: a member with a journal records joining the group, and each advance of U before
 * it is published, with the pairs the step's transactions put in it
 * ([[io.sharedstate.core.StateJournal.groupAdvanced]]), so the member replays alone to the same values
 * and U; its plain updates are journaled as before. Staged and waiting transactions are not (a durable
 * caller re-stages and re-commits them from its own log). A durable caller also gets each step's
 * outcomes before anything of the step is journaled ([[onDecided]]) and records each step's advances
 * before the members journal them ([[recordSteps]]), so a step a kill cut between two members'
 * journal commits is completed at the restart ([[completeStep]]).
 */
final class TransactionGroup(val name: String, members: Seq[State], executor: Executor, parallelism: Int,
    parallelFrom: Long)
    extends ProgressGroup {
  if (members.isEmpty) throw new SharedStateException(s"Transaction group '$name' needs at least one State.")
  private val dup = members.groupBy(_.name).collect { case (n, ss) if ss.size > 1 => n }
  if (dup.nonEmpty) throw new SharedStateException(
    s"Transaction group '$name' names State(s) ${dup.toSeq.sorted.mkString(", ")} more than once.")

  /** The member States, in the order given. */
  val states: IndexedSeq[State] = members.toIndexedSeq
  private val byName: Map[String, State] = states.iterator.map(s => s.name -> s).toMap
  private val lock = new ReentrantLock()
  private val round =
    new TransactionRound(states,
      if (executor == null) ChainScheduler.inline else new ChainScheduler(executor, parallelism), parallelFrom)
  private val staging = new ConcurrentHashMap[(String, Long), ConcurrentHashMap[Int, TransactionBatch]]()
  private val lastEpoch = mutable.HashMap.empty[String, Long]
  private val waiting = ArrayBuffer.empty[(TransactionId, Transaction)] // committed, time >= U
  // Each step's outcomes as one element: one node and one compare-and-set per step, not per outcome.
  private val outcomes = new ConcurrentLinkedQueue[IndexedSeq[TransactionOutcome]]()
  private val lateTotal = new java.util.concurrent.atomic.AtomicLong()
  private val late = new ConcurrentLinkedQueue[RejectedTransaction]() // not drained yet (drainLate)
  @volatile private var decidedHook: TransactionGroup.Decided = null // set: outcomes go there, not to the queues
  @volatile private var stepRecord: TransactionGroup.StepRecord = null
  private val resuming = mutable.HashSet.empty[String] // writers U waits for (holdUntilResumed)
  // A final State (U = +infinity: every writer finished, e.g. a bulk load) would make every transaction
  // late, and reopening it inside a group would move one U back for all members: refused, naming it.
  private val finalMembers = states.filter(_.updateProgress == EventTime.PlusInfinity).map(_.name)
  if (finalMembers.nonEmpty) throw new SharedStateException(
    s"Transaction group '$name': ${finalMembers.map(n => s"State '$n'").mkString(", ")} " +
      s"${if (finalMembers.size == 1) "is" else "are"} final (every writer finished, " +
      "U = +infinity, e.g. after a bulk load), so every transaction on them would be late. Reopen each first: " +
      "a streaming writer registering on a final State reopens it at its last finite U (e.g. load the initial " +
      "values with a streaming writer that stops, or start and stop any streaming writer on it), then create " +
      "the group.")
  // The group's U: the largest member U when created (nothing below it may change), then advanced for all.
  @volatile private var u: Long = states.map(_.updateProgress).max

  {
    val joined = ArrayBuffer.empty[State]
    try states.foreach { s => s.joinGroup(this, lock); joined += s }
    catch { case e: Throwable => joined.foreach(_.leaveGroup()); throw e }
  }

  def this(name: String, members: Seq[State], executor: Executor, parallelism: Int) =
    this(name, members, executor, parallelism, TransactionGroup.ParallelFrom)

  def this(name: String, members: Seq[State]) =
    this(name, members, java.util.concurrent.ForkJoinPool.commonPool(),
      java.util.concurrent.ForkJoinPool.getCommonPoolParallelism)

  /** The group's update progress: every value of every member and every transaction below it is final. */
  def updateProgress: Long = u

  def state(name: String): State = byName.getOrElse(name, throw unknownState(name))

  // ---- writers ----

  /**
   * Registers `writer` on every member (see State.registerWriter). Once every writer has finished the
   * group is final (U = +infinity): a State reopens for a writer that registers then, a group does not.
   */
  def registerWriter(writer: String): Unit = {
    if (u == EventTime.PlusInfinity) throw new SharedStateException(
      s"Transaction group '$name' is final (every writer finished, U = +infinity): writer '$writer' cannot join it. " +
        "Create the States and their group anew.")
    states.foreach(_.registerWriter(writer))
  }

  /** Reports a writer's progress on every member without an epoch. */
  def reportUpdateProgress(writer: String, progress: Long): Unit =
    states.foreach(_.reportUpdateProgress(writer, progress))

  def finishWriter(writer: String): Unit = states.foreach(_.finishWriter(writer))
  def pauseWriter(writer: String): Unit = states.foreach(_.pauseWriter(writer))

  /** Forgets `writer` on every member, with what it staged. */
  def deregisterWriter(writer: String): Unit = {
    underLock {
      staging.keySet.asScala.filter(_._1 == writer).foreach(staging.remove)
      lastEpoch -= writer
    }
    states.foreach(_.deregisterWriter(writer))
  }

  /**
   * Stages the transactions one task of `writer` produced in `epoch`; a retried task replaces its
   * earlier attempt. Fails, naming it, on a transaction that touches a State outside the group.
   */
  def stage(writer: String, epoch: Long, task: Int, batch: TransactionBatch): Unit = {
    var i = 0
    while (i < batch.size) { checkStates(batch(i)); i += 1 }
    staging.computeIfAbsent((writer, epoch), _ => new ConcurrentHashMap[Int, TransactionBatch]()).put(task, batch)
  }

  /** Drops what an aborted epoch staged, transactions and plain updates. */
  def abortEpoch(writer: String, epoch: Long): Unit = {
    staging.remove((writer, epoch))
    states.foreach(_.abortEpoch(writer, epoch))
  }

  /**
   * Commits `epoch` of `writer` on the group: its transactions (late ones rejected against the group's
   * U now) and, on every member, its plain updates, with the writer's new progress. Idempotent like
   * State.commitEpoch. Whatever U now passes is applied before this returns.
   *
   * @param payloads per member State name, the payload its journal records with the commit (see
   *                 State.commitEpoch; a durable State's data files)
   */
  def commitEpoch(writer: String, epoch: Long, progress: Long, finish: Boolean = false,
      payloads: Map[String, AnyRef] = Map.empty): TransactionGroup.CommitOutcome = {
    val out = underLock {
      states.foreach { s =>
        if (s.writerProgress(writer).isEmpty) throw new SharedStateException(
          s"Writer '$writer' is not registered on State '${s.name}' of transaction group '$name': register it " +
            "with TransactionGroup.registerWriter.")
      }
      val tasks = Option(staging.remove((writer, epoch))).map(_.asScala.toSeq.sortBy(_._1)).getOrElse(Nil)
      if (epoch <= lastEpoch.getOrElse(writer, -1L)) {
        states.foreach(s => s.commitEpochLocked(writer, epoch, progress, payloads.getOrElse(s.name, null), finish))
        TransactionGroup.CommitOutcome(alreadyCommitted = true, 0, 0, u)
      } else {
        val uNow = u
        var accepted = 0
        val lateOnes = ArrayBuffer.empty[RejectedTransaction]
        tasks.foreach { case (task, batch) =>
          var i = 0
          while (i < batch.size) {
            val txn = batch(i)
            val id = TransactionId(writer, epoch, task, i)
            if (txn.time < uNow) {
              val r = RejectedTransaction(id, txn.time, RejectedTransaction.Late, uNow, txn.payload)
              lateTotal.incrementAndGet(); lateOnes += r; lateIn(r, txn)
            } else { waiting += ((id, txn)); accepted += 1 }
            i += 1
          }
        }
        // Handed out before the members journal the commit: a restart recommits an epoch no member has.
        if (lateOnes.nonEmpty) {
          val hook = decidedHook
          if (hook != null) hook.decided(IndexedSeq.empty, lateOnes.toIndexedSeq) else lateOnes.foreach(this.late.add)
        }
        val late = lateOnes.size
        staging.keySet.asScala.filter { case (w, e) => w == writer && e < epoch }.foreach(staging.remove)
        lastEpoch(writer) = epoch
        states.foreach(s => s.commitEpochLocked(writer, epoch, progress, payloads.getOrElse(s.name, null), finish))
        advance()
        TransactionGroup.CommitOutcome(alreadyCommitted = false, accepted, late, u)
      }
    }
    drainPendingFetches()
    out
  }

  /**
   * After a restart (a new group over members rebuilt from their journals): the transactions of an
   * epoch of `writer` that the members committed before this group existed, per task in the order
   * staged (as the caller journaled them). Those not final yet (time >= U) wait again with their ids
   * (each was accepted: U at its commit was at most U now); the others were applied, or rejected as
   * late, then. The group treats the epoch as committed from now on; an epoch it already committed
   * (or restored) changes nothing. Returns how many wait again.
   */
  def restoreCommitted(writer: String, epoch: Long, tasks: Seq[(Int, TransactionBatch)]): Int = underLock {
    states.foreach { s =>
      if (s.lastCommittedEpoch(writer) < epoch) throw new SharedStateException(
        s"Transaction group '$name': epoch $epoch of writer '$writer' is not committed on State '${s.name}' " +
          s"(its last: ${s.lastCommittedEpoch(writer)}); stage and commit it instead of restoring it.")
    }
    if (epoch <= lastEpoch.getOrElse(writer, -1L)) 0
    else {
      var restored = 0
      tasks.sortBy(_._1).foreach { case (task, batch) =>
        var i = 0
        while (i < batch.size) {
          val txn = batch(i)
          checkStates(txn)
          if (txn.time >= u) { waiting += ((TransactionId(writer, epoch, task, i), txn)); restored += 1 }
          i += 1
        }
      }
      lastEpoch(writer) = epoch
      restored
    }
  }

  // ---- durability hooks ----

  /**
   * From now on each step's outcomes, and each epoch's late transactions, go to `hook` (on the
   * committing thread, under the group's lock) instead of [[drainOutcomes]] and [[drainLate]]: before
   * anything of that step is journaled in a member, so a caller that keeps them durably loses none.
   */
  def onDecided(hook: TransactionGroup.Decided): Unit = underLock { decidedHook = hook }

  /**
   * From now on each advance of U hands `record` every journaled member's advance (its U and the pairs
   * put in it) before any member journals its own; see [[completeStep]].
   */
  def recordSteps(record: TransactionGroup.StepRecord): Unit = underLock { stepRecord = record }

  /**
   * After a restart, before any writer commits: a kill between two members' journal commits of one
   * advance leaves members one step apart (a step moves U of all of them, so never more). Each member
   * below the group's U whose advance to it is in `recorded` (the last step [[recordSteps]] handed out,
   * by member name) is brought to it: journaled, then applied as replay applies it. A recorded step
   * below the group's U was journaled by every member (nothing to complete). Returns the members
   * completed.
   */
  def completeStep(recorded: Map[String, GroupAdvance]): Seq[String] = underLock {
    states.filter(_.updateProgress < u).flatMap { s =>
      recorded.get(s.name).filter(_.updateProgress == u).map { advance =>
        s.journalGroupAdvance(advance)
        if (advance.pairs.isEmpty) s.applyAndPublish(u)
        else { TransactionRound.replay(s, advance); s.publishGroupProgress(u) }
        s.name
      }
    }
  }

  /**
   * After a restart, before any progress event of a member: U stays where it is until each of `writers`
   * is [[resumed]]. Their transactions that the members committed before the kill and that wait for U
   * are known to the group only once the caller gives them back ([[restoreCommitted]], from its own
   * log); until then any progress event (the writer registering again, a plain writer's commit) could
   * move U past them with nothing to apply, losing their effects though their outcomes were decided.
   */
  def holdUntilResumed(writers: Iterable[String]): Unit = underLock { resuming ++= writers }

  /** `writer`'s transactions are back (see [[holdUntilResumed]]): once no writer is held, U moves again. */
  def resumed(writer: String): Unit = {
    underLock { if (resuming.remove(writer)) advance() }
    drainPendingFetches()
  }

  // ---- results ----

  /** The outcomes that became final since the last call, in (time, id) order. */
  def drainOutcomes(): Seq[TransactionOutcome] = {
    val out = Vector.newBuilder[TransactionOutcome]
    var step = outcomes.poll()
    while (step != null) { out ++= step; step = outcomes.poll() }
    out.result()
  }

  /**
   * How many transactions were rejected as late since the group was made. Not kept one by one here
   * (a long-running group would hold every late event): [[drainLate]] hands each out once, and each
   * member's rejected log (capped) keeps its keys.
   */
  def lateCount: Long = lateTotal.get

  /**
   * The late transactions rejected since the last call, in rejection order (each once; a caller that
   * reports them, e.g. as outcomes, drains them like [[drainOutcomes]]).
   */
  def drainLate(): Seq[RejectedTransaction] = Iterator.continually(late.poll()).takeWhile(_ != null).toVector

  /** Transactions committed and waiting for U to pass their time. */
  def waitingTransactions: Int = underLock(waiting.size)

  /** Dissolves the group: each State's U is its own again. Transactions still waiting are dropped. */
  def close(): Unit = underLock {
    waiting.clear()
    staging.clear()
    states.foreach(_.leaveGroup())
  }

  // ---- the group's U ----

  private[core] def advance(): Unit = underLock {
    val newU = states.map(_.writersProgress).min
    if (newU > u && resuming.isEmpty) {
      val (ready, later) = waiting.partition(_._2.time < newU)
      if (ready.isEmpty) {
        journalStep(states.filter(_.journaled).map(_ -> GroupAdvance(newU, IndexedSeq.empty)))
        states.foreach(_.applyAndPublish(newU))
      } else {
        waiting.clear(); waiting ++= later
        round.run(
          newU,
          ready.toIndexedSeq,
          decided = os => {
            val hook = decidedHook
            if (hook != null) hook.decided(os, IndexedSeq.empty)
            else outcomes.add(os)
          },
          journal = journalStep
        )
        states.foreach(_.publishGroupProgress(newU))
      }
      u = newU
    }
  }

  // Each journaled member's advance: recorded as one step first, then journaled member by member.
  private def journalStep(advances: IndexedSeq[(State, GroupAdvance)]): Unit = {
    val record = stepRecord
    if (record != null && advances.nonEmpty) record.stepping(advances.map { case (s, a) => s.name -> a })
    advances.foreach { case (s, a) => s.journalGroupAdvance(a) }
  }

  // A late transaction goes to the rejected log of each member it would have written, once per key
  // (reason late_transaction, no value), as a late update goes to its State's: the rejected table of a
  // durable State and the rejected count. Called before the members commit the epoch, so it is
  // journaled with that step.
  private def lateIn(r: RejectedTransaction, txn: Transaction): Unit =
    txn.writes.distinct.foreach { k =>
      state(k.state).rejectApplied(RejectedUpdate(k.key.bytes, r.time, null, RejectedTransaction.LateInState,
          r.id.writer, r.id.epoch, r.updateProgressAtArrival))
    }

  private[core] def drainPendingFetches(): Unit = states.foreach(_.drainPendingFetches())

  // Every State a transaction touches is a member (no Set built per transaction: this runs per event).
  private def checkStates(txn: Transaction): Unit = {
    checkStates(txn.reads)
    checkStates(txn.writes)
  }

  private val memberNames: Array[String] = states.map(_.name).toArray

  // A transaction's State names are most often the members' own String objects: a reference compare
  // finds those without hashing or comparing characters; any other name is looked up by value.
  private def checkStates(keys: IndexedSeq[StateKey]): Unit = {
    var i = 0
    while (i < keys.length) {
      val n = keys(i).state
      var s = 0
      while (s < memberNames.length && (memberNames(s) ne n)) s += 1
      if (s == memberNames.length && !byName.contains(n)) throw unknownState(n)
      i += 1
    }
  }

  private def unknownState(n: String): SharedStateException = new SharedStateException(
    s"Transaction group '$name' has no State '$n'. Its States: ${states.map(_.name).mkString(", ")}.")

  private def underLock[T](body: => T): T = {
    lock.lock()
    try body
    finally lock.unlock()
  }
}

object TransactionGroup {

  /**
   * Rounds with fewer accesses than this (reads and writes of their transactions) are prepared and run
   * on the committing thread alone: below it, waking a helper and handing dependencies between cores
   * cost more than the second core saves (measured on 500-transaction rounds of the TStream
   * applications, about 3,000 accesses: see benchmarks/results/transactions/parallel-round-2026-11-28).
   * System property `sharedstate.txn.parallelFromAccesses`; 0 = always in parallel.
   */
  val ParallelFrom: Long = java.lang.Long.getLong("sharedstate.txn.parallelFromAccesses", 8192L).longValue

  /** What [[TransactionGroup.commitEpoch]] did: transactions accepted and rejected as late, U after it. */
  final case class CommitOutcome(alreadyCommitted: Boolean, accepted: Int, rejected: Int, updateProgress: Long)

  /** Where a durable caller keeps what the group decides (see [[TransactionGroup.onDecided]]). */
  trait Decided {

    /** A step's outcomes (in (time, id) order) or an epoch's late transactions; it may throw to stop the step. */
    def decided(outcomes: IndexedSeq[TransactionOutcome], late: IndexedSeq[RejectedTransaction]): Unit
  }

  /** Where a durable caller records a step before the members journal it (see [[TransactionGroup.recordSteps]]). */
  trait StepRecord {

    /** The step's advance of each journaled member, by name; it may throw to stop the step. */
    def stepping(advances: IndexedSeq[(String, GroupAdvance)]): Unit
  }
}
