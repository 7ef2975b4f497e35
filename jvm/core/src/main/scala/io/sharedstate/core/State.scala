package io.sharedstate.core

import io.sharedstate.core.compaction.CompactionRule
import io.sharedstate.core.fetch.{FetchAnswers, FetchRequest, FetchRule, PendingFetches}
import io.sharedstate.core.row.ValueType
import io.sharedstate.core.partial.{LocalFetch, PartialFetch, PartialRule, PartialView, QueryInstance}
import io.sharedstate.core.rules.UpdateRule
import java.util.concurrent.{CompletableFuture, ConcurrentHashMap, ConcurrentLinkedQueue, ScheduledFuture}
import java.util.concurrent.atomic.AtomicLong
import java.util.concurrent.locks.ReentrantLock
import java.util.stream.IntStream
import scala.collection.mutable
import scala.jdk.CollectionConverters._

/**
 * A named, partitioned, multi-versioned State (Nova). Writers stage updates per (writer, epoch);
 * committing an epoch checks lateness against update progress U, reports the writer's progress,
 * applies every staged update below the new U and only then publishes U, so a read-committed fetch
 * that sees t < U also sees every update at or before t. Fetches never lock; fetches that are not
 * answerable yet wait in a pending queue ordered by reply time and are answered when U passes them.
 * Fetch progress F (minimum over readers) bounds compaction: pairs below min(F, U) may be compacted.
 */
final class State(val spec: StateSpec) {
  import State._

  val valueType: ValueType = spec.valueType
  private val rule = {
    val r = UpdateRule.resolve(spec.updateRule, valueType)
    if (spec.isPartial) new PartialRule(r) else r
  }

  /** How readers see a partial State's instances; null for a State that is not partial. */
  private[sharedstate] val partialView: PartialView = spec.partialView
  private val compaction = CompactionRule.resolve(spec.compaction, valueType)
  private val parts = Array.tabulate(spec.partitions)(i => new StatePartition(i, rule, compaction))
  // Partitions whose entries are here but not this holder's to count: a live move's pre-copy before the
  // take-over (see preload), or a pre-copied hand-over's entries until release. Metrics leave them out.
  private val notServed = java.util.concurrent.ConcurrentHashMap.newKeySet[Integer]()
  private val allowedFetchRules = spec.fetchRules.map(_.trim.toLowerCase).toSet
  private val allowedUserFetchClasses = spec.fetchRules.map(_.trim)
    .filter(_.toLowerCase.startsWith(FetchRule.ClassPrefix)).map(_.substring(FetchRule.ClassPrefix.length).trim).toSet
  // Replaced by the group's lock when the State joins a ProgressGroup (see underCommitLock).
  @volatile private var commitLock = new ReentrantLock()
  @volatile private var group: ProgressGroup = null
  private val updateTracker = new ProgressTracker("update", EventTime.MinusInfinity, finishedToInfinity = true)
  private val fetchTracker = new ProgressTracker("fetch", EventTime.MinusInfinity, finishedToInfinity = false)
  private val lastEpoch = mutable.HashMap.empty[String, Long]
  private val staging = new ConcurrentHashMap[(String, Long), ConcurrentHashMap[Int, UpdateBatch]]()
  private val stagingBytes = new AtomicLong()
  // The first spec.rejectedLogCap rejected updates; the rest are only counted (rejectedCount - cap).
  // A durable State's journal still gets every one (stepRejected), for its rejected table.
  private val rejectedLog = new ConcurrentLinkedQueue[RejectedUpdate]()
  private val rejectedCount = new AtomicLong()
  private val rejectedLogBytes = new AtomicLong()
  // What the current step (a commit or progress event, live or replayed) rejected; drained at its end.
  private val stepRejected = new ConcurrentLinkedQueue[RejectedUpdate]()
  private val writerStats = new ConcurrentHashMap[String, WriterStats]()
  private val pending = new PendingFetches
  @volatile private var u: Long = EventTime.MinusInfinity
  @volatile private var f: Long = EventTime.MinusInfinity
  private var lastFiniteU: Long = EventTime.MinusInfinity
  @volatile private var journal: StateJournal = null
  // A member of a transaction group replayed from its journal: U may not pass the group's U the journal
  // recorded (see StateReplay.groupJoined); PlusInfinity = not held. Released when the State joins a group.
  @volatile private var heldAt: Long = EventTime.PlusInfinity
  @volatile private var feed: ChangeFeed = null // while a change subscription is open
  /** Pairs per partition the change feed holds for its slowest subscription (tests make it small). */
  private[core] var changeFeedCapacity: Int = ChangeFeed.DefaultCapacity
  @volatile private var sweeper: ScheduledFuture[_] =
    if (spec.compactionIntervalMs > 0) CompactionScheduler.schedule(this, spec.compactionIntervalMs) else null

  def name: String = spec.name

  /** Unique in this JVM per State object: a State dropped and created again under its name is another one. */
  val incarnation: Long = State.incarnations.incrementAndGet()

  def partitionCount: Int = parts.length
  def partition(i: Int): StatePartition = parts(i)
  def partitionOf(key: Key): StatePartition = parts(key.partition(parts.length))

  /** Update progress U: every value with timestamp < U is final. */
  def updateProgress: Long = u

  /** Fetch progress F: no registered reader fetches below it any more, so pairs below min(F, U) may be compacted. */
  def fetchProgress: Long = f

  /** Pairs older than this may be compacted away. */
  def compactionHorizon: Long = math.min(f, u)

  /** Records progress events in `j` from now on (see [[StateJournal]]); null stops journaling. */
  def attachJournal(j: StateJournal): Unit = underCommitLock { journal = j }

  // ---- writers and update progress ----

  /**
   * Registers an update writer. A new writer joins at the current U, so it cannot reopen final
   * values; on a State whose U is +infinity because every writer finished, it reopens the State at
   * the last finite U (see docs/engine.md).
   */
  def registerWriter(writer: String): Unit = afterProgress(underCommitLock {
    QueryInstance.checkDistinct(spec, writer, updateTracker.reporters.keys)
    val rejoining = !updateTracker.isActive(writer)
    val reopenAt = if (u == EventTime.PlusInfinity && rejoining && updateTracker.activeCount == 0) lastFiniteU else u
    if (reopenAt != u && group != null) throw new SharedStateException(
      s"State '${spec.name}' is in transaction group '${group.name}', which is final (every writer finished): " +
        s"writer '$writer' cannot reopen it.")
    if (rejoining && journal != null) {
      journal.writerRegistered(writer, updateTracker.progressOf(writer).getOrElse(frontierOf(reopenAt)))
    }
    u = reopenAt
    updateTracker.register(writer, u)
    writerStats.putIfAbsent(writer, new WriterStats)
    publishProgress(updateTracker.current)
    journalRejected()
  })

  def writerProgress(writer: String): Option[Long] = underCommitLock(updateTracker.progressOf(writer))

  /** The last epoch of `writer` that was committed here, or -1. */
  def lastCommittedEpoch(writer: String): Long = underCommitLock(lastEpoch.getOrElse(writer, -1L))

  /**
   * Stages what one task of `writer` produced in `epoch`. A retried task replaces its earlier
   * attempt, so a re-run never stages the same rows twice. Fails if the memory limit would be passed.
   */
  def stage(writer: String, epoch: Long, task: Int, batch: UpdateBatch): Unit = {
    checkMemory(batch.bytes, s"staging ${batch.size} update(s) of writer '$writer' epoch $epoch")
    val previous =
      staging.computeIfAbsent((writer, epoch), _ => new ConcurrentHashMap[Int, UpdateBatch]()).put(task, batch)
    stagingBytes.addAndGet(batch.bytes - (if (previous == null) 0L else previous.bytes))
  }

  /**
   * With lateness policy `fail`: fails, naming the update, if `epoch` of `writer` staged an update
   * below U. Lets a coordinator check every host before any of them commits the epoch.
   */
  def checkNotLate(writer: String, epoch: Long): Unit = underCommitLock {
    if (spec.lateness == StateSpec.FailLate && epoch > lastEpoch.getOrElse(writer, -1L)) {
      val tasks = Option(staging.get((writer, epoch))).map(_.asScala.toSeq.map(_._2)).getOrElse(Nil)
      failOnLate(writer, epoch, tasks, u)
    }
  }

  /** Drops what an aborted epoch staged. */
  def abortEpoch(writer: String, epoch: Long): Unit = dropStaging((writer, epoch))

  /**
   * Commits `epoch` of `writer` with the writer's new progress (its event-time watermark).
   * Idempotent: an epoch at or below the writer's last committed one changes nothing. With a journal
   * attached, the commit is journaled (with `payload`) before anything of it becomes visible.
   *
   * @param finish the writer finishes with this epoch, in the same step (a bulk load)
   */
  def commitEpoch(writer: String, epoch: Long, progress: Long, payload: AnyRef = null,
      finish: Boolean = false): CommitOutcome =
    afterProgress(commitEpochLocked(writer, epoch, progress, payload, finish))

  // The commit without answering pending fetches: a group commits its States with it under its lock.
  private[core] def commitEpochLocked(writer: String, epoch: Long, progress: Long, payload: AnyRef,
      finish: Boolean): CommitOutcome = underCommitLock {
    if (!updateTracker.isRegistered(writer)) {
      throw new SharedStateException(s"Writer '$writer' is not registered on State '${spec.name}'.")
    }
    val last = lastEpoch.getOrElse(writer, -1L)
    if (epoch <= last) {
      dropStaging((writer, epoch))
      CommitOutcome(alreadyCommitted = true, 0, 0, u)
    } else {
      val tasks = Option(staging.get((writer, epoch))).map(_.asScala.toSeq.sortBy(_._1).map(_._2)).getOrElse(Nil)
      val uNow = u
      if (spec.lateness == StateSpec.FailLate) failOnLate(writer, epoch, tasks, uNow)
      checkMemory(0L, s"committing epoch $epoch of writer '$writer'")
      val newProgress = math.max(updateTracker.progressOf(writer).get, progress)
      if (journal != null) journal.epochCommitting(JournalCommit(writer, epoch, uNow, newProgress, finish, payload))
      dropStaging((writer, epoch))
      val (accepted, rejected) = admit(writer, epoch, tasks, uNow)
      // Epochs older than this one that never committed were aborted attempts: drop their staging.
      staging.keySet.asScala.filter { case (w, e) => w == writer && e < epoch }.foreach(dropStaging)
      lastEpoch(writer) = epoch
      updateTracker.report(writer, newProgress)
      if (finish) updateTracker.finish(writer)
      countWriter(writer, accepted, rejected)
      publishProgress(updateTracker.current)
      journalRejected()
      CommitOutcome(alreadyCommitted = false, accepted, rejected, u)
    }
  }

  /** Reports a writer's update progress without an epoch (a Progress operator); going back is an error. */
  def reportUpdateProgress(writer: String, progress: Long): Unit = afterProgress(underCommitLock {
    updateTracker.report(writer, progress)
    publishProgress(updateTracker.current)
    journalRejected()
  })

  /** A writer that has stopped for good no longer holds U back. */
  def finishWriter(writer: String): Unit = afterProgress(underCommitLock {
    if (journal != null && updateTracker.isActive(writer)) journal.writerFinished(writer)
    updateTracker.finish(writer)
    publishProgress(updateTracker.current)
    journalRejected()
  })

  /**
   * A writer that is not running (its query stopped) or went idle no longer holds U back; unlike a
   * finished one it never lets U jump to +infinity (with only paused writers U stays), and
   * registering again resumes it with its progress and committed epochs. Not journaled: a durable
   * State reopened later recovers its writers as registered, and each resumes when its query starts.
   */
  def pauseWriter(writer: String): Unit = afterProgress(underCommitLock {
    updateTracker.pause(writer)
    publishProgress(updateTracker.current)
    journalRejected()
  })

  /** Every registered writer with its progress, last committed epoch and whether it is active, paused or finished. */
  def writerStatuses: Seq[WriterStatus] = underCommitLock {
    updateTracker.reporters.toSeq.sortBy(_._1).map { case (w, p) =>
      val status =
        if (updateTracker.isFinished(w)) WriterStatus.Finished
        else if (updateTracker.isPaused(w)) WriterStatus.Paused
        else WriterStatus.Active
      WriterStatus(w, p, lastEpoch.getOrElse(w, -1L), status)
    }
  }

  /** Forgets a writer and what it staged; it no longer holds U back. */
  def deregisterWriter(writer: String): Unit = afterProgress(underCommitLock {
    if (journal != null && updateTracker.isRegistered(writer)) journal.writerDeregistered(writer)
    updateTracker.deregister(writer)
    staging.keySet.asScala.filter(_._1 == writer).foreach(dropStaging)
    lastEpoch -= writer
    publishProgress(updateTracker.current)
    journalRejected()
  })

  // ---- readers and fetch progress ----

  def registerReader(reader: String): Unit = underCommitLock {
    fetchTracker.register(reader, f)
    publishFetchProgress()
  }

  /** A reader's fetch progress: it will not fetch below it any more. Going back is an error. */
  def reportFetchProgress(reader: String, progress: Long): Unit = underCommitLock {
    fetchTracker.report(reader, progress)
    publishFetchProgress()
  }

  def finishReader(reader: String): Unit = underCommitLock { fetchTracker.finish(reader); publishFetchProgress() }
  def deregisterReader(reader: String): Unit =
    underCommitLock { fetchTracker.deregister(reader); publishFetchProgress() }
  def readerProgress(reader: String): Option[Long] = underCommitLock(fetchTracker.progressOf(reader))

  // ---- fetches ----

  /** Read-committed `latest`: the newest pair with timestamp <= t, answered only when t < U. */
  def fetchLatest(key: Key, t: Long): FetchAnswer.LatestAnswer = {
    if (partialView == null) {
      // The common case without the request object and rule dispatch: the checks and the answer are
      // the ones fetch(FetchRequest(key, t)) makes (latest is always allowed; its lower bound is t).
      checkNotOvertaken(t)
      if (t >= u) FetchAnswer.NotYet
      else {
        val a = FetchRule.Latest.answer(partitionOf(key).getCompacted(key, compactionHorizon), t)
        checkNotOvertaken(t)
        a
      }
    } else fetchLatestScoped(key, t)
  }

  private def fetchLatestScoped(key: Key, t: Long): FetchAnswer.LatestAnswer = {
    val request = FetchRequest(key, t)
    checkFetch(request)
    if (t >= u) FetchAnswer.NotYet
    else {
      val a = scoped(FetchRule.Latest).answer(partitionOf(key).getCompacted(key, compactionHorizon), t)
        .asInstanceOf[FetchAnswer.LatestAnswer]
      checkNotOvertaken(t)
      a
    }
  }

  /** The fetch rule `name` of this State, over [from, t] for ranges and aggregates. */
  def fetchRule(name: String, from: Long = EventTime.MinusInfinity): FetchRule = {
    val n = Option(name).map(_.trim.toLowerCase).getOrElse("")
    if (!allowedFetchRules.contains(n)) throw new SharedStateException(
      s"State '${spec.name}' does not answer fetch rule '$name'. Its fetch rules: ${spec.fetchRules.mkString(", ")}.")
    FetchRule.resolve(name, valueType, from)
  }

  /**
   * Answers `request` now, or NotYet when its reply time is not below U. Fails when the fetch reads
   * below fetch progress F, where compaction may already have dropped pairs it needs.
   */
  def fetch(request: FetchRequest): FetchAnswer = {
    checkFetch(request)
    if (request.replyTime >= u) FetchAnswer.NotYet else answer(request)
  }

  /** Answers each of `requests` as [[fetch]] would, in order: [[fetchInto]], each answer as an object. */
  def fetch(requests: Array[FetchRequest]): Array[FetchAnswer] = {
    val out = new FetchAnswers(requests.length)
    fetchInto(requests, requests.length, out)
    out.toArray
  }

  /**
   * Answers `requests(0 until count)` into `out`, each as [[fetch]] would; a found `latest` is its time
   * and its value copied into `out`'s buffer (no object per answer: see [[FetchAnswers]]). A look-up of a large State is rounds of
   * dependent cache misses (the request's key, the key table's lines, then the stored key and the
   * packed set), so the requests go through a software pipeline in groups of [[State.FetchGroup]]: every
   * request is checked and its key's partition read, then every key's slot found, then every stored key
   * confirmed (its set's lines asked for meanwhile), then every fetch answered. Each stage is a loop of
   * short independent steps, so the CPU keeps the misses of many look-ups in flight, where finishing one
   * fetch before the next waits for each of its misses in turn. U is read once per group before its
   * look-ups, F after its sets (as for a single fetch: see checkNotOvertaken).
   */
  def fetchInto(requests: Array[FetchRequest], count: Int, out: FetchAnswers): Unit = {
    out.reset(count)
    val group = math.min(count, State.FetchGroup)
    val lookups = new KeyTable.Lookups(math.max(group, 1))
    val sets = new Array[Array[Byte]](group)
    // Per look-up of the group: its key's partition, and where it is (NotYet, Asked, Found: a set or none).
    val partOf = new Array[Int](group)
    val status = new Array[Int](group)
    val nParts = parts.length
    var from = 0
    while (from < count) {
      val until = math.min(count, from + State.FetchGroup)
      val uNow = u
      val fBefore = f
      // Stage 0: every request checked (in order, as one at a time), every key's partition (the request's
      // and its key's lines: a caller that made them just before has them in cache).
      var i = from
      while (i < until) {
        val r = requests(i)
        if (!(r.rule eq FetchRule.Latest)) checkRule(r)
        val lower = r.rule.lowerBound(r.time)
        if (lower < fBefore) checkNotOvertaken(lower)
        if (r.replyTime < uNow) { partOf(i - from) = r.key.partition(nParts); status(i - from) = Asked }
        else status(i - from) = NotYet
        i += 1
      }
      // Stage 1: every key's home slot asked for (a tight loop, many misses in flight), then every key's
      // slot in its partition's table.
      i = from
      while (i < until) {
        val j = i - from
        if (status(j) == Asked) parts(partOf(j)).touchHome(lookups, requests(i).key)
        i += 1
      }
      i = from
      while (i < until) {
        val j = i - from
        if (status(j) == Asked) parts(partOf(j)).start(lookups, j, requests(i).key)
        i += 1
      }
      // Stage 2: every stored key object and set asked for, then every stored key confirmed, its set's
      // first lines asked for meanwhile.
      i = from
      while (i < until) {
        val j = i - from
        if (status(j) == Asked) lookups.touchFound(j)
        i += 1
      }
      i = from
      while (i < until) {
        val j = i - from
        if (status(j) == Asked) { sets(j) = lookups.finish(j); status(j) = Found }
        i += 1
      }
      // Read after the sets, so F read after this horizon is at least it (see checkNotOvertaken).
      val horizon = compactionHorizon
      val fNow = f
      // Stage 3: the answers.
      i = from
      while (i < until) {
        val j = i - from
        if (status(j) == Found) {
          val r = requests(i)
          val lower = r.rule.lowerBound(r.time)
          if (lower < fNow) checkNotOvertaken(lower)
          val packed = sets(j)
          if ((r.rule eq FetchRule.Latest) && partialView == null) {
            if (packed == null) out.setAbsent(i)
            else {
              val set = parts(partOf(j)).compacted(r.key, new ValueSet(packed), horizon)
              val k = set.latestIndex(r.time)
              val length = if (k < 0) 0 else set.valueLength(k)
              // A transaction's delete (an empty value) reads as no value.
              if (length == 0) out.setAbsent(i)
              else out.setFound(i, set.timeAt(k), set.packedValues, set.valueOffset(k), length)
            }
          } else {
            val set = if (packed == null) null else new ValueSet(packed)
            val compacted = parts(partOf(j)).compacted(r.key, set, horizon)
            out.set(i, scoped(r.rule).answer(compacted, r.time))
          }
        }
        sets(j) = null
        i += 1
      }
      from = until
    }
  }

  /**
   * Answers `request` as soon as U passes its reply time: at once if it already has, else from the
   * pending queue on the thread that advances U. The future fails if the fetch is invalid.
   */
  def fetchAsync(request: FetchRequest): CompletableFuture[FetchAnswer] = {
    val future = new CompletableFuture[FetchAnswer]()
    try {
      checkFetch(request)
      if (request.replyTime < u) future.complete(answer(request))
      else {
        pending.add(request, future)
        drainPending() // U may have passed it between the check and the add
      }
    } catch { case e: Exception => future.completeExceptionally(e) }
    future
  }

  def pendingFetchCount: Int = pending.size

  /**
   * The rule a fetch is answered with: on a partial State every fetch reads the merged instances
   * (global scope) unless it is a [[LocalFetch]]; a local fetch of a State that is not partial, or
   * whose instances are writer queries, fails.
   */
  private def scoped(rule: FetchRule): FetchRule = rule match {
    case local: LocalFetch =>
      if (partialView == null) throw new SharedStateException(
        s"State '${spec.name}' is not partial: a local fetch (scope 'local') needs a State created with a partial merge.")
      if (spec.instances != StateSpec.TaskInstances) throw new SharedStateException(
        s"State '${spec.name}' keeps one instance per writer query (instances='${spec.instances}'): a local fetch " +
          "reads the instance of the fetching task's partition, which only instances='task' has. Use scope 'global'.")
      PartialFetch(local.inner, partialView, local.instance)
    case r if partialView == null => r
    case r => PartialFetch.global(r, partialView)
  }

  private def checkFetch(request: FetchRequest): Unit = {
    checkRule(request)
    checkNotOvertaken(request.rule.lowerBound(request.time))
  }

  // Whether this State answers the request's rule.
  private def checkRule(request: FetchRequest): Unit = {
    val rule = request.rule match { case l: LocalFetch => l.inner; case r => r }
    val allowed = (rule eq FetchRule.Latest) || allowedUserFetchClasses.contains(rule.getClass.getName) ||
      (FetchRule.BuiltInNames.contains(rule.name) && allowedFetchRules.contains(rule.name))
    if (!allowed) {
      throw new SharedStateException(
        s"State '${spec.name}' does not answer fetch rule '${rule.name}'. Its fetch rules: ${spec.fetchRules.mkString(", ")}.")
    }
  }

  private def answer(request: FetchRequest): FetchAnswer = {
    val set = partitionOf(request.key).getCompacted(request.key, compactionHorizon)
    val result = scoped(request.rule).answer(set, request.time)
    checkNotOvertaken(request.rule.lowerBound(request.time))
    result
  }

  // F is published before any compaction uses it, so if the set we read was compacted above the
  // fetch's lower bound, this read of F (after the read of the set) sees it, and the fetch fails
  // instead of answering from pairs that are gone.
  private def checkNotOvertaken(lower: Long): Unit = {
    val fNow = f
    if (lower < fNow) throw new SharedStateException(
      s"Fetch of State '${spec.name}' reads from ${EventTime.show(lower)}, below its fetch progress F=${EventTime.show(fNow)}: " +
        "pairs older than F may have been compacted. Fetch at or after F, or register the reader before its progress passes the fetch.")
  }

  // ---- compaction ----

  /** One bounded sweep round: each partition compacts up to `maxEntriesPerPartition` entries. Returns entries examined. */
  def compactionStep(maxEntriesPerPartition: Int): Int = {
    val horizon = compactionHorizon
    parts.map(_.sweep(maxEntriesPerPartition, horizon)).sum
  }

  // ---- change stream ----

  /**
   * The applied pairs of partition `i` with from <= timestamp < until, in timestamp order. `until`
   * must not pass U (only final pairs are read, so a range reads the same whenever it is read), and
   * `from` must not be below F, since compaction may have dropped older pairs.
   */
  def changes(i: Int, from: Long, until: Long): Array[Change] = {
    if (until > u) throw new ChangesNotFinalException(
      s"Changes of State '${spec.name}' up to ${EventTime.show(until)} are not final yet (U=${EventTime.show(u)}).")
    checkNotOvertaken(from)
    val changes = ChangeScan.between(parts(i), from, until)
    checkNotOvertaken(from) // F read after the scan: see checkNotOvertaken
    changes
  }

  /**
   * Every partition's applied pairs with from <= timestamp < until, in (timestamp, partition, key
   * bytes) order: the order of the change feed. Same bounds as [[changes]].
   */
  def mergedChanges(from: Long, until: Long): Array[Change] = mergedChanges(from, until, parts.indices)

  /** [[mergedChanges]] of `partitions` only (in ascending order). */
  def mergedChanges(from: Long, until: Long, partitions: Seq[Int]): Array[Change] = {
    val all = Array.concat(partitions.sorted.map(changes(_, from, until)): _*)
    java.util.Arrays.sort(all, Ordering.by[Change, Long](_.time)) // stable: partition, then key order within a time
    all
  }

  /**
   * Subscribes to the change feed (see [[ChangeFeed]]): every final pair at or after `from`, once, in
   * (timestamp, partition, key bytes) order, delivered as U passes it. The first subscription creates
   * the feed; closing the last one drops it. `from` must not be below F (see [[changes]]).
   */
  def subscribeChanges(from: Long): ChangeSubscription = subscribeChanges(from, parts.indices)

  /**
   * [[subscribeChanges]] whose pairs from before it joined are read from `seamPartitions` only: a
   * cluster host's subscription covers the partitions it owns when it opens, so partitions it adopts
   * later (their earlier pairs restored, not published) cannot show up in a range read twice.
   */
  def subscribeChanges(from: Long, seamPartitions: Seq[Int]): ChangeSubscription = underCommitLock {
    if (feed == null) feed = new ChangeFeed(spec.name, parts.length, u, changeFeedCapacity)
    val joined = feed
    joined.subscribe(from, (f, t) => mergedChanges(f, t, seamPartitions),
      sub =>
        underCommitLock {
          joined.unsubscribe(sub)
          if ((feed eq joined) && joined.subscriptionCount == 0) feed = null
        })
  }

  /** Whether a change feed runs (some subscription is open). */
  def hasChangeFeed: Boolean = feed != null

  private[core] def changeFeed: ChangeFeed = feed

  /** The open change subscription `id` (a task finds its query's subscription by id). */
  def changeSubscription(id: Long): ChangeSubscription =
    Option(feed).flatMap(_.subscription(id)).getOrElse(throw new SharedStateException(
        s"State '${spec.name}' has no open change subscription $id: its change-stream query stopped, or the State " +
          "was re-created since the batch was planned."))

  // ---- durability ----

  /**
   * Loads a partition snapshot into this (fresh) State: its entries, and its staged updates, which
   * apply once U passes them. Progress is restored by the writers re-registering and committing.
   */
  def restorePartition(snapshot: codec.PartitionSnapshot): Unit = underCommitLock {
    if (snapshot.partitionCount != parts.length || snapshot.partition < 0 || snapshot.partition >= parts.length) {
      throw new SharedStateException(s"Snapshot of partition ${snapshot.partition} of ${snapshot.partitionCount} " +
        s"does not fit State '${spec.name}' with ${parts.length} partitions.")
    }
    val p = parts(snapshot.partition)
    snapshot.entries.foreach { case (k, set) => p.restore(k, set) }
    snapshot.staged.foreach { case (k, t, v) => p.stage(k, t, v) }
  }

  /**
   * Hands `partitions` over to another holder of this State (a live move between hosts): under the
   * commit lock (no step lands in between), each partition's snapshot and their keys' share of every
   * uncommitted task batch are taken, and this State forgets both, so a later commit here applies
   * nothing in them. The caller makes sure no task stages in them meanwhile.
   */
  def handOver(partitions: Seq[Int]): PartitionHandOver = handOver(partitions, precopied = false)

  /**
   * [[handOver]]; `precopied`: the partitions were pre-copied ([[preCopy]]), so each snapshot is a
   * delta: only the keys changed since the pre-copy began (and the staged updates), the tracking
   * the pre-copy started ends here, and the entries stay until [[release]].
   */
  def handOver(partitions: Seq[Int], precopied: Boolean): PartitionHandOver = underCommitLock {
    val moving = partitions.distinct.sorted.toArray
    val inMoving = new Array[Boolean](parts.length)
    moving.foreach(inMoving(_) = true)
    if (precopied) moving.foreach(i =>
      if (!parts(i).tracksChanges) throw new SharedStateException(
        s"State '${spec.name}' partition $i was not pre-copied: no delta can be handed over."))
    val snapshots = moving.map(i =>
      codec.SnapshotCodec.encode(
        codec.PartitionCapture.of(spec.name, parts(i), parts.length, u, delta = precopied, startChain = false)))
    if (precopied) moving.foreach { i => parts(i).stopTracking(); notServed.add(i) }
    val shares = mutable.ArrayBuffer.empty[StagedShare]
    staging.forEach { (id, tasks) =>
      tasks.replaceAll { (task, batch) =>
        val keep = new UpdateBatch
        val (ks, ts, vs) =
          (mutable.ArrayBuffer.empty[Array[Byte]], mutable.ArrayBuffer.empty[Long],
            mutable.ArrayBuffer.empty[Array[Byte]])
        var i = 0
        while (i < batch.size) {
          if (inMoving(new Key(batch.keyAt(i)).partition(parts.length))) {
            ks += batch.keyAt(i); ts += batch.timeAt(i); vs += batch.valueAt(i)
          } else keep.add(batch.keyAt(i), batch.timeAt(i), batch.valueAt(i))
          i += 1
        }
        if (ks.isEmpty) batch
        else {
          batch.rejected.foreach(keep.reject)
          shares += StagedShare(id._1, id._2, task, ks.toArray, ts.toArray, vs.toArray)
          stagingBytes.addAndGet(keep.bytes - batch.bytes)
          keep
        }
      }
    }
    // A pre-copied partition keeps its entries until [[release]] (outside the fence): should the new
    // owner fail, taking the delta back here restores it exactly.
    moving.foreach(i => if (precopied) parts(i).clearStaged() else parts(i).clear())
    PartitionHandOver(moving, snapshots, shares.toArray)
  }

  /**
   * The pre-copy of a live move (STRETCH-like: the fence then moves only the delta): each partition's
   * applied entries, encoded as a full snapshot without staged updates, while commits go on. The
   * commit lock is held only to start tracking the partitions' changed keys; the entries are read and
   * encoded after it (immutable ValueSets: a key that changes meanwhile is tracked, and
   * `handOver(partitions, precopied = true)` sends its entry again). [[cancelPreCopy]] if no hand-over follows.
   */
  def preCopy(partitions: Seq[Int]): Array[Array[Byte]] = {
    val moving = partitions.distinct.sorted
    val progress = underCommitLock {
      moving.foreach { i =>
        // A State that keeps delta snapshot chains tracks already: a move must not take its changed keys.
        if (parts(i).tracksChanges) throw new SharedStateException(
          s"State '${spec.name}' partition $i tracks changed keys already (delta snapshots, or a pre-copy under way).")
      }
      moving.foreach(parts(_).trackChanges())
      u
    }
    moving.map { i =>
      val entries = mutable.ArrayBuffer.empty[(Key, ValueSet)]
      parts(i).foreachEntry((k, v) => entries += (k -> v))
      codec.SnapshotCodec.encode(new codec.PartitionCapture(spec.name, i, parts.length, progress, delta = false,
          entries.toArray, Array.empty, null))
    }.toArray
  }

  /**
   * A further pre-copy round (live migration's iterative pre-copy): the entries of the keys changed
   * since the previous round, as delta snapshots without staged updates, read outside the commit lock
   * as [[preCopy]] reads; tracking goes on, so the fence's delta holds only what changes after this
   * round. Worth a round while the previous one took long enough for many keys to change.
   */
  def preCopyAgain(partitions: Seq[Int]): Array[Array[Byte]] = {
    val moving = partitions.distinct.sorted
    val (progress, changed) = underCommitLock {
      moving.foreach(i =>
        if (!parts(i).tracksChanges) throw new SharedStateException(
          s"State '${spec.name}' partition $i is not being pre-copied: no further round."))
      (u, moving.map(parts(_).takeChangedKeys()))
    }
    moving.zip(changed).map { case (i, keys) =>
      val entries = mutable.ArrayBuffer.empty[(Key, ValueSet)]
      keys.forEach { k =>
        val set = parts(i).get(k)
        if (set != null) entries += (k -> set)
      }
      codec.SnapshotCodec.encode(new codec.PartitionCapture(spec.name, i, parts.length, progress, delta = true,
          entries.toArray, Array.empty, null))
    }.toArray
  }

  /** Ends the change tracking a [[preCopy]] started: the move it was for does not happen. */
  def cancelPreCopy(partitions: Seq[Int]): Unit = underCommitLock(partitions.foreach(parts(_).stopTracking()))

  /**
   * Loads a pre-copy ([[preCopy]], then each [[preCopyAgain]] round, whose entries replace those of
   * their keys) into partitions this holder does not serve yet: their entries,
   * without the commit lock (commits of the other partitions go on; these have nothing staged, so no
   * commit touches them). The delta of the hand-over then replaces what changed since ([[takeOver]]).
   */
  def preload(snapshots: Seq[Array[Byte]]): Seq[Int] = snapshots.map { b =>
    val s = codec.SnapshotCodec.decode(b)
    if (s.partitionCount != parts.length || s.staged.nonEmpty || (!s.delta && parts(s.partition).keyCount != 0))
      throw new SharedStateException(s"State '${spec.name}': a pre-copy of partition ${s.partition} does not fit here.")
    val p = parts(s.partition)
    notServed.add(s.partition)
    s.entries.foreach { case (k, set) => p.restore(k, set) }
    s.partition
  }

  /**
   * Forgets every entry of `partitions`: what [[preload]] loaded (the move did not happen), or what a
   * pre-copied hand-over left here (the new owner took the partitions).
   */
  def release(partitions: Seq[Int]): Unit = underCommitLock(partitions.foreach { i =>
    parts(i).clear(); notServed.remove(i)
  })

  /**
   * Takes partitions another holder handed over (see [[handOver]]): their snapshots, which must be
   * empty here (or hold the pre-copy the delta snapshots complete, see [[preload]]), and their share of
   * the uncommitted task batches, added to what those tasks staged here.
   */
  def takeOver(h: PartitionHandOver): Unit = underCommitLock {
    h.snapshots.foreach(b => restorePartition(codec.SnapshotCodec.decode(b)))
    h.partitions.foreach(notServed.remove(_))
    h.staged.foreach { s =>
      if (s.epoch > lastEpoch.getOrElse(s.writer, -1L)) {
        val more = s.batch
        val tasks = staging.computeIfAbsent((s.writer, s.epoch), _ => new ConcurrentHashMap[Int, UpdateBatch]())
        val merged = Option(tasks.get(s.task)) match {
          case Some(existing) =>
            val b = new UpdateBatch
            var i = 0
            while (i < existing.size) { b.add(existing.keyAt(i), existing.timeAt(i), existing.valueAt(i)); i += 1 }
            existing.rejected.foreach(b.reject)
            i = 0
            while (i < more.size) { b.add(more.keyAt(i), more.timeAt(i), more.valueAt(i)); i += 1 }
            stagingBytes.addAndGet(-existing.bytes)
            b
          case None => more
        }
        tasks.put(s.task, merged)
        stagingBytes.addAndGet(merged.bytes)
      }
    }
  }

  /** This State's progress without its data (see [[ProgressImage]]). */
  def progressImage: ProgressImage = underCommitLock {
    ProgressImage(u, f, lastFiniteU, updateTracker.whenEmptyProgress, updateTracker.image, lastEpoch.toMap,
      fetchTracker.image)
  }

  /** Starts this State (a new holder of some of a State's partitions) from another's progress. */
  def restoreProgress(image: ProgressImage): Unit = underCommitLock {
    updateTracker.restore(image.writers, image.updateWhenEmpty)
    fetchTracker.restore(image.readers, EventTime.MinusInfinity)
    lastEpoch.clear(); lastEpoch ++= image.lastEpochs
    image.writers.foreach(w => writerStats.putIfAbsent(w.id, new WriterStats))
    u = image.updateProgress; f = image.fetchProgress; lastFiniteU = image.lastFiniteU
  }

  /**
   * Loads a chain of partition snapshots into this (fresh) State: a full snapshot, then deltas in
   * order, each replacing the entries of the keys it holds; the staged updates are the last link's.
   */
  def restorePartitionChain(chain: Seq[codec.PartitionSnapshot]): Unit = underCommitLock {
    if (chain.isEmpty || chain.head.delta || chain.tail.exists(!_.delta) || chain.exists(
        _.partition != chain.head.partition)) {
      throw new SharedStateException(s"State '${spec.name}': a snapshot chain is one partition's full snapshot followed " +
        s"by its deltas, got ${chain.map(s => s"partition ${s.partition} ${if (s.delta) "delta" else "full"}").mkString(", ")}.")
    }
    chain.foreach { link =>
      if (link.delta) parts(link.partition).clearStaged()
      restorePartition(link)
    }
  }

  /**
   * From now on, every partition remembers which keys changed since its last snapshot capture, so a
   * snapshot can hold only those ([[capturePartitionWith]] with `delta`). Call before the State is in use
   * (a recovery calls it after loading the snapshots, before replaying the changelog after them).
   */
  def trackChanges(): Unit = underCommitLock(parts.foreach(_.trackChanges()))

  /** Encodes partition `i` (entries and staged updates) in the snapshot format. */
  def snapshotPartition(i: Int): Array[Byte] = snapshotPartitionWith(i)(())._1

  /**
   * Encodes partition `i` and evaluates `mark` at the same commit boundary (under the commit lock,
   * so no commit lands between the two): a durable snapshot records there which journal events it
   * already holds. Only this partition is held, and only to capture it (references to its immutable
   * entries and a copy of its staged updates); the encoding runs after the lock is released.
   */
  def snapshotPartitionWith[T](i: Int)(mark: => T): (Array[Byte], T) = {
    val (capture, marked) = capturePartitionWith(i, delta = false, startChain = false)(mark)
    (codec.SnapshotCodec.encode(capture), marked)
  }

  /**
   * Captures partition `i` for a snapshot (see [[codec.PartitionCapture]]) and evaluates `mark` at the
   * same commit boundary. `startChain` (needs [[trackChanges]]): the partition's changed keys are taken,
   * so the next `delta` capture holds the keys changed after this one; `delta`: this capture holds only
   * the keys changed since the previous chain capture. Encode it with SnapshotCodec outside the lock;
   * if it is not stored, hand its keys back with [[returnChanged]].
   */
  def capturePartitionWith[T](i: Int, delta: Boolean, startChain: Boolean)(mark: => T): (codec.PartitionCapture, T) =
    underCommitLock((codec.PartitionCapture.of(spec.name, parts(i), parts.length, u, delta, startChain), mark))

  /** The changed keys a capture took go back to its partition: the next delta holds them (its snapshot was not stored). */
  def returnChanged(capture: codec.PartitionCapture): Unit = parts(capture.partition).returnChanged(capture.changedKeys)

  /**
   * Runs `body` between commits: no commit (nor progress event) runs meanwhile, they wait for it.
   * For housekeeping of a durable log that must not interleave with the State's own log writes.
   */
  def betweenCommits[T](body: => T): T = underCommitLock(body)

  // ---- replay (see StateReplay) ----

  // Replay goes through the same steps as the live calls, but takes each commit's lateness decision
  // (its U) from the journal instead of from the State.
  private[core] def replayRegistered(writer: String, frontier: Long): Seq[RejectedUpdate] = underCommitLock {
    if (u == EventTime.PlusInfinity && !updateTracker.isActive(writer) && updateTracker.activeCount == 0)
      u = lastFiniteU
    updateTracker.register(writer, frontier)
    writerStats.putIfAbsent(writer, new WriterStats)
    publishProgress(updateTracker.current)
    drainStepRejected()
  }

  private[core] def replayCommit(writer: String, epoch: Long, uAtCommit: Long, writerProgress: Long, finish: Boolean,
      tasks: Seq[UpdateBatch]): Seq[RejectedUpdate] = underCommitLock {
    if (!updateTracker.isRegistered(writer)) updateTracker.register(writer, EventTime.MinusInfinity)
    if (heldAt != EventTime.PlusInfinity) heldAt = math.max(heldAt, uAtCommit)
    val (accepted, rejected) = admit(writer, epoch, tasks, uAtCommit)
    lastEpoch(writer) = math.max(lastEpoch.getOrElse(writer, -1L), epoch)
    updateTracker.report(writer, math.max(updateTracker.progressOf(writer).get, writerProgress))
    if (finish) updateTracker.finish(writer)
    countWriter(writer, accepted, rejected)
    publishProgress(updateTracker.current)
    drainStepRejected()
  }

  private[core] def replayFinished(writer: String): Seq[RejectedUpdate] = underCommitLock {
    updateTracker.finish(writer)
    publishProgress(updateTracker.current)
    drainStepRejected()
  }

  private[core] def replayDeregistered(writer: String): Seq[RejectedUpdate] = underCommitLock {
    updateTracker.deregister(writer)
    lastEpoch -= writer
    publishProgress(updateTracker.current)
    drainStepRejected()
  }

  private[core] def replayGroupJoined(at: Long): Seq[RejectedUpdate] = underCommitLock {
    heldAt = at
    drainStepRejected()
  }

  // A group advance replayed: `applyRound` applies what the step applied below `newU`, then U is published.
  private[core] def replayAdvance(newU: Long)(applyRound: => Unit): Seq[RejectedUpdate] = underCommitLock {
    if (newU > u) {
      applyRound
      publishGroupProgress(newU)
    }
    heldAt = if (heldAt == EventTime.PlusInfinity) newU else math.max(heldAt, newU)
    drainStepRejected()
  }

  private[core] def replayFinish(): Unit = drainPending()

  // ---- introspection ----

  /**
   * Rejected and late updates, oldest first: at most the first `spec.rejectedLogCap` of them (the
   * metrics count them all, and those past the cap as `rejectedDropped`).
   */
  def rejectedUpdates: Seq[RejectedUpdate] = rejectedLog.asScala.toSeq

  def metrics: StateMetrics = {
    val stats = writerStats.asScala.map { case (w, s) => w -> (s.accepted.get, s.rejected.get) }.toMap
    // a live move's copy counts at one holder only: where the partition is served
    def held(f: StatePartition => Long): IndexedSeq[Long] =
      parts.toIndexedSeq.map(p => if (notServed.contains(p.id)) 0L else f(p))
    val (writers, readers, staged, stagedBytes) = underCommitLock(
      (updateTracker.reporters, fetchTracker.reporters, parts.map(_.stagedCount.toLong).sum,
        parts.map(_.stagedBytes).sum))
    StateMetrics(
      name = spec.name,
      updateProgress = u,
      keys = held(_.keyCount.toLong).sum,
      bytesHeld = held(_.bytesHeld).sum,
      updatesApplied = parts.map(_.updatesApplied).sum,
      updatesStaged = staged,
      updatesRejected = rejectedCount.get,
      writers = writers,
      writerCounts = stats,
      fetchProgress = f,
      readers = readers,
      rawBytes = held(_.rawBytes).sum,
      pairs = held(_.pairCount).sum,
      pairsCompacted = parts.map(_.pairsCompacted).sum,
      stagedBytes = stagedBytes + stagingBytes.get,
      pendingFetches = pending.size,
      memoryLimitBytes = spec.memoryLimitBytes,
      partitionBytes = held(_.bytesHeld),
      partitionKeys = held(_.keyCount.toLong),
      rejectedBytes = rejectedLogBytes.get,
      rejectedDropped = math.max(0L, rejectedCount.get - spec.rejectedLogCap)
    )
  }

  /** Estimated bytes held: applied entries, staged updates, epochs not yet committed and the rejected log. */
  def memoryUsed: Long =
    parts.map(p => p.bytesHeld + p.stagedBytes).sum + stagingBytes.get + rejectedLogBytes.get

  /** Stops the background sweep and fails the fetches still waiting. */
  def close(): Unit = {
    val s = sweeper
    if (s != null) { s.cancel(false); sweeper = null }
    pending.failAll(new SharedStateException(s"State '${spec.name}' was dropped while this fetch waited for U."))
    underCommitLock {
      if (feed != null) feed.close(s"State '${spec.name}' was dropped.")
      feed = null
    }
  }

  // ---- internals ----

  private def checkMemory(extra: Long, doing: String): Unit = {
    val limit = spec.memoryLimitBytes
    if (limit > 0) {
      val used = memoryUsed
      if (used + extra > limit) throw new SharedStateException(
        s"State '${spec.name}' would hold ${used + extra} bytes after $doing (now $used, ${extra} more), above its " +
          s"memoryLimitBytes of $limit. Raise memoryLimitBytes, use more partitions across executors, or report fetch " +
          "progress so compaction (keep_latest) can drop old versions.")
    }
  }

  private def failOnLate(writer: String, epoch: Long, tasks: Seq[UpdateBatch], uNow: Long): Unit =
    tasks.foreach { b =>
      var i = 0
      while (i < b.size) {
        if (b.times(i) < uNow) throw new SharedStateException(
          s"State '${spec.name}' (lateness policy 'fail'): writer '$writer' epoch $epoch has an update at " +
            s"${EventTime.show(b.times(i))}, below U=${EventTime.show(uNow)}. Nothing of the epoch was applied; " +
            "use lateness 'reject' to route late updates to the late-updates table instead.")
        i += 1
      }
    }

  // Stages the updates of an epoch at or above `uNow` and rejects the rest (late, or rejected in the
  // task). Tasks in id order, so ties at one (key, timestamp) resolve the same way on every run.
  private def admit(writer: String, epoch: Long, tasks: Seq[UpdateBatch], uNow: Long): (Int, Int) = {
    var accepted = 0
    var rejected = 0
    val origin = new UpdateOrigin(writer, epoch, uNow)
    tasks.foreach { batch =>
      var i = 0
      while (i < batch.size) {
        val t = batch.times(i)
        if (t < uNow) {
          reject(RejectedUpdate(batch.keys(i), t, batch.values(i), RejectedUpdate.Late, writer, epoch, uNow))
          rejected += 1
        } else {
          val key = new Key(batch.keys(i))
          partitionOf(key).stage(key, t, batch.values(i), origin)
          accepted += 1
        }
        i += 1
      }
      batch.rejected.foreach { r => reject(r.copy(writer = writer, epoch = epoch, updateProgressAtArrival = uNow)) }
      rejected += batch.rejected.length
    }
    (accepted, rejected)
  }

  private def countWriter(writer: String, accepted: Int, rejected: Int): Unit = {
    val stats = writerStats.computeIfAbsent(writer, _ => new WriterStats)
    stats.accepted.addAndGet(accepted)
    stats.rejected.addAndGet(rejected)
  }

  private def frontierOf(t: Long): Long = if (EventTime.isFinite(t)) t else EventTime.MinusInfinity

  // Called from parallel partition appliers too: the count decides, atomically, which updates the log keeps.
  private def reject(r: RejectedUpdate): Unit = {
    if (rejectedCount.incrementAndGet() <= spec.rejectedLogCap) {
      rejectedLog.add(r)
      rejectedLogBytes.addAndGet(MemoryEstimate.rejected(r))
    }
    stepRejected.add(r)
  }

  /**
   * At recovery, before the State is in use: rejections it made before a restart that the replay did not
   * make again (a snapshot held their partitions' updates), counted and logged ahead of the replay's as
   * they were first, not journaled again.
   */
  private[sharedstate] def restoreRejected(earlier: Seq[RejectedUpdate]): Unit =
    if (earlier.nonEmpty) {
      val replayed = rejectedLog.asScala.toVector
      rejectedLog.clear()
      rejectedLogBytes.set(0L)
      rejectedCount.addAndGet(earlier.size.toLong)
      (earlier.iterator ++ replayed.iterator).take(spec.rejectedLogCap).foreach { r =>
        rejectedLog.add(r)
        rejectedLogBytes.addAndGet(MemoryEstimate.rejected(r))
      }
    }

  private def drainStepRejected(): Seq[RejectedUpdate] =
    if (stepRejected.isEmpty) Nil else Iterator.continually(stepRejected.poll()).takeWhile(_ != null).toVector

  // Hands the journal what this step rejected (under the commit lock, after the step's own event).
  private def journalRejected(): Unit = {
    val rejected = drainStepRejected()
    if (journal != null && rejected.nonEmpty) journal.updatesRejected(rejected)
  }

  private def dropStaging(id: (String, Long)): Unit = {
    val tasks = staging.remove(id)
    if (tasks != null) tasks.values.forEach(b => stagingBytes.addAndGet(-b.bytes))
  }

  // Applies what the new U makes final before publishing it (see the class comment). U never goes back.
  // A State in a group leaves it to the group, which applies and publishes U for all its States at once.
  private def publishProgress(newU: Long): Unit = {
    val g = group
    if (g != null) g.advance()
    else applyAndPublish(math.min(newU, heldAt))
  }

  /** Applies this State's staged updates below `newU` on its own (no transaction), then publishes U. */
  private[core] def applyAndPublish(newU: Long): Unit = {
    if (newU > u) {
      val horizon = math.min(f, newU)
      val busy = parts.count(_.stagedCount > 0)
      val subscribed = feed
      if (subscribed == null) {
        if (busy > 1)
          IntStream.range(0, parts.length).parallel().forEach(i => parts(i).applyBefore(newU, horizon, reject))
        else parts.foreach(_.applyBefore(newU, horizon, reject))
      } else {
        // The feed gets the pairs this round made final, before U is published: a subscription that
        // sees U has them in its slot.
        val newly = new Array[Array[Change]](parts.length)
        val from = u
        def applyOne(i: Int): Unit = newly(i) = parts(i).applyCollecting(from, newU, horizon, reject)
        if (busy > 1) IntStream.range(0, parts.length).parallel().forEach(i => applyOne(i))
        else parts.indices.foreach(applyOne)
        subscribed.publish(newly, newU)
      }
      u = newU
      if (EventTime.isFinite(newU)) lastFiniteU = newU
    }
  }

  private def publishFetchProgress(): Unit = {
    val newF = fetchTracker.current
    if (newF > f) f = newF
  }

  private def drainPending(): Unit = pending.drain(u, answer)

  // Pending fetches are answered after the commit lock is released, so callbacks never run under it.
  // In a group, a commit on this State may have moved every member's U.
  private def afterProgress[T](result: T): T = {
    val g = group
    if (g != null) g.drainPendingFetches() else drainPending()
    result
  }

  // The lock read, taken, and checked again: a State joining a group swaps it, and a thread that took
  // the old one meanwhile retries on the new one.
  private def underCommitLock[T](body: => T): T = {
    var l = commitLock
    l.lock()
    while (l ne commitLock) { l.unlock(); l = commitLock; l.lock() }
    try body
    finally l.unlock()
  }

  // ---- hooks for a ProgressGroup (io.sharedstate.core.txn.TransactionGroup) ----

  /**
   * Joins `g`: from now on this State's commits and progress events run under `lock` (the group's,
   * shared by its States, so one step of any of them sees all of them still) and advancing U is the
   * group's ([[ProgressGroup.advance]]).
   */
  private[core] def joinGroup(g: ProgressGroup, lock: ReentrantLock): Unit = underCommitLock {
    if (group != null) throw new SharedStateException(
      s"State '${spec.name}' is already in transaction group '${group.name}'; a State belongs to at most one group.")
    if (journal != null) journal.groupJoined(g.name, u)
    group = g
    commitLock = lock
    heldAt = EventTime.PlusInfinity
  }

  /** Leaves the group: U is this State's own again (from its next progress event). */
  private[core] def leaveGroup(): Unit = underCommitLock {
    group = null
    commitLock = new ReentrantLock()
  }

  /** U as this State's writers alone would set it (the minimum over its active writers). */
  private[core] def writersProgress: Long = updateTracker.current

  /** Publishes U decided by the group, after the group applied everything below it. */
  private[core] def publishGroupProgress(newU: Long): Unit = if (newU > u) {
    u = newU
    if (EventTime.isFinite(newU)) lastFiniteU = newU
  }

  /** Routes an update the group's applier rejected (a rule failure) like this State's own rejections. */
  private[core] def rejectApplied(r: RejectedUpdate): Unit = reject(r)

  private[core] def drainPendingFetches(): Unit = drainPending()

  /** Whether a journal records this State's steps (then a group journals the pairs its rounds put here). */
  private[core] def journaled: Boolean = journal != null

  /** Journals an advance of the group's U (with the pairs its round put here), before it is published here. */
  private[core] def journalGroupAdvance(applied: GroupAdvance): Unit =
    if (journal != null) journal.groupAdvanced(applied)

  private[core] def partitionsInternal: Array[StatePartition] = parts
}

object State {
  private val incarnations = new AtomicLong()

  /** Fetches per look-up group of a batched fetch: enough misses in flight, all still in L1/L2 when answered. */
  private[core] val FetchGroup = 64
  // Where a look-up of a batched fetch is (State.fetchInto).
  private val NotYet = 0
  private val Asked = 1
  private val Found = 2
  final case class CommitOutcome(alreadyCommitted: Boolean, accepted: Int, rejected: Int, updateProgress: Long)

  private final class WriterStats {
    val accepted = new AtomicLong()
    val rejected = new AtomicLong()
  }
}
