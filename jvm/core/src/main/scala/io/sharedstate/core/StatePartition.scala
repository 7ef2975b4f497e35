package io.sharedstate.core

import io.sharedstate.core.compaction.CompactionRule
import io.sharedstate.core.rules.UpdateRule
import java.util.Arrays
import java.util.concurrent.{Callable, ForkJoinPool}
import java.util.concurrent.atomic.AtomicLong
import java.util.concurrent.locks.ReentrantLock
import scala.collection.mutable.ArrayBuffer

/**
 * One partition of a State: the applied entries (key -> ValueSet) and the staged updates that wait
 * for update progress to pass them.
 *
 * Readers never lock: entries are immutable ValueSets (their packed arrays) published through a
 * [[KeyTable]]. Staging and applying are called by one committer at a time (the State's commit lock).
 * Applying groups the ready updates into one chain per key, in (timestamp, arrival) order, and runs
 * the chains in parallel (TStream): each key has exactly one applier, so no lock is needed, and each
 * entry is published with a compare-and-set so a concurrent compaction of the same entry is never
 * lost. Keys new to the partition are inserted after the chains, by the committer, once the table
 * has been grown for exactly that many (so the table never grows while appliers run).
 */
final class StatePartition(val id: Int, rule: UpdateRule, compaction: CompactionRule) {
  def this(id: Int, rule: UpdateRule) = this(id, rule, CompactionRule.KeepLatest)

  private val entries = new KeyTable()
  private val readsPrevious = rule.readsPrevious
  private val staged = new StagedUpdates
  private val heldBytes = new AtomicLong()
  private val rawHeld = new AtomicLong()
  private val pairs = new AtomicLong()
  private val appliedCount = new AtomicLong()
  private val compactedPairs = new AtomicLong()
  private val sweepLock = new ReentrantLock()
  // Keys whose entry changed since the last snapshot capture (null: not tracking, see trackChanges).
  // Appliers add under the commit lock, as captures swap it; a compaction (off the commit lock) adds
  // under the read lock, so a capture (write lock) never swaps between its publish and its add.
  @volatile private var changed: java.util.Set[Key] = null
  private val changedSwap = new java.util.concurrent.locks.ReentrantReadWriteLock()
  private var sweepCursor: KeyTable#Cursor = null

  def stage(key: Key, time: Long, value: Array[Byte]): Unit = staged.add(key, time, value, null)
  def stage(key: Key, time: Long, value: Array[Byte], origin: UpdateOrigin): Unit = staged.add(key, time, value, origin)

  def applyBefore(progress: Long): Int = applyBefore(progress, Long.MinValue, _ => ())

  /**
   * Applies every staged update with time < `progress`, per key in (timestamp, arrival) order, then
   * compacts the touched entries below `horizon`. An update the rule throws on is handed to
   * `rejected` with the reason, the rest of its chain still applies. Returns how many were applied.
   */
  def applyBefore(progress: Long, horizon: Long, rejected: RejectedUpdate => Unit): Int =
    applyReady(staged.takeBefore(progress), horizon, rejected)

  /**
   * Like `applyBefore`, and returns the pairs that became final: the stored pairs with
   * from <= timestamp < progress of the keys this round touched, ordered by (timestamp, key bytes)
   * as [[ChangeScan]] orders them. Only touched keys can hold such pairs (every update at or above
   * `from` waited for this round), so this costs the round's keys, not the partition's (change feed).
   */
  def applyCollecting(from: Long, progress: Long, horizon: Long, rejected: RejectedUpdate => Unit): Array[Change] = {
    val ready = staged.takeBefore(progress)
    applyReady(ready, horizon, rejected)
    if (ready == null) StatePartition.NoChanges
    else changesOf(Iterator.tabulate(ready.size)(ready.keys(_)), from, progress)
  }

  /** The stored pairs with from <= timestamp < progress of `keys` (repeats ignored), in [[ChangeScan]] order. */
  private[core] def changesOf(keys: Iterator[Key], from: Long, progress: Long): Array[Change] = {
    val touched = new java.util.HashSet[Key]()
    val out = ArrayBuffer.empty[Change]
    keys.foreach { key =>
      if (touched.add(key)) {
        val set = get(key)
        if (set != null) {
          var j = set.firstIndexAtOrAfter(from)
          while (j < set.size && set.timeAt(j) < progress) {
            out += Change(key.bytes, set.timeAt(j), set.valueAt(j)); j += 1
          }
        }
      }
    }
    val changes = out.toArray
    Arrays.sort(changes, ChangeScan.Order)
    changes
  }

  // ---- hooks for a transaction group's applier (io.sharedstate.core.txn) ----

  /** Removes and returns the staged updates with time < `progress`, in arrival order; null if none. */
  private[core] def takeStagedBefore(progress: Long): StagedUpdates = staged.takeBefore(progress)

  private[core] def updateRule: UpdateRule = rule
  private[core] def compactionRule: CompactionRule = compaction

  /**
   * Makes room for `keys` more keys, so chains that publish new keys ([[publishEntry]] with no
   * `before`) never need the table to grow; called by the committer before it runs them.
   */
  private[core] def reserveKeys(keys: Int): Unit = entries.reserve(keys)

  /**
   * Publishes `after` as the entry of `key` if it is still `before` (a compare-and-set, as the chains
   * of [[applyBefore]] publish), counting `applied` updates and `pairsDropped` compacted pairs.
   * False when a compaction replaced the entry meanwhile: rebuild from the new entry and retry.
   */
  private[core] def publishEntry(
      key: Key, before: ValueSet, after: ValueSet, applied: Int, pairsDropped: Int): Boolean = {
    val published =
      if (before == null) entries.insert(key, after.packed) else entries.replace(key, before.packed, after.packed)
    if (published) {
      val c = changed
      if (c != null) c.add(key)
      account(key, before, after, pairsDropped)
      if (applied > 0) appliedCount.addAndGet(applied.toLong)
    }
    published
  }

  private def applyReady(ready: StagedUpdates, horizon: Long, rejected: RejectedUpdate => Unit): Int = {
    if (ready == null) 0
    else {
      // Ordered by the key table's own slots, so the chains' look-ups walk the table in order (its lines
      // are fetched ahead instead of missed one by one); a run of one rank is one whole hash.
      val capacity = entries.capacity
      val order = ready.orderBySlot(capacity)
      val segments = StatePartition.segments(order, ready)
      val applied = new AtomicLong()
      val failures = new java.util.concurrent.ConcurrentLinkedQueue[RejectedUpdate]()
      val fresh = new java.util.concurrent.ConcurrentLinkedQueue[StatePartition.Fresh]()
      def run(a: Int, b: Int): Unit =
        applied.addAndGet(applySegment(ready, order, capacity, a, b, horizon, failures, fresh))
      if (segments.length <= 2) run(segments(0), segments(1))
      else {
        val tasks = new java.util.ArrayList[Callable[Unit]]()
        var s = 0
        while (s + 1 < segments.length) {
          val a = segments(s); val b = segments(s + 1)
          tasks.add(() => run(a, b))
          s += 1
        }
        ForkJoinPool.commonPool().invokeAll(tasks).forEach(_.get())
      }
      insertFresh(fresh)
      failures.forEach(r => rejected(r))
      appliedCount.addAndGet(applied.get())
      applied.get().toInt
    }
  }

  // The keys new to the partition, built by their chains: the table grows once for all of them, then
  // they are inserted (still before U is published, so no reader can ask for them yet).
  // They go in in the grown table's slot order, so the inserts too walk the table from start to end.
  private def insertFresh(fresh: java.util.Queue[StatePartition.Fresh]): Unit = if (!fresh.isEmpty) {
    entries.reserve(fresh.size)
    val news = fresh.toArray(new Array[StatePartition.Fresh](0))
    val order = new Array[Long](news.length)
    val capacity = entries.capacity
    var i = 0
    while (i < news.length) { order(i) = SlotOrder.entry(news(i).key.hashCode, capacity, i); i += 1 }
    SlotOrder.sort(order)
    val acc = new StatePartition.Accounting
    val c = changed
    i = 0
    while (i < order.length) {
      val f = news(SlotOrder.indexOf(order(i)))
      if (!entries.insert(f.key, f.set.packed)) throw new IllegalStateException("a new key was inserted twice")
      if (c != null) c.add(f.key)
      acc.add(f.key, null, f.set, f.pairsDropped)
      i += 1
    }
    publish(acc)
  }

  // Runs the chains of order[a, b): runs of one rank (one whole hash), split by key equality. Byte and pair counts
  // are summed locally and published once per segment; new keys go to `fresh`.
  private def applySegment(ready: StagedUpdates, order: Array[Long], capacity: Int, a: Int, b: Int, horizon: Long,
      failures: java.util.Queue[RejectedUpdate], fresh: java.util.Queue[StatePartition.Fresh]): Long = {
    val acc = new StatePartition.Accounting
    val news = new java.util.ArrayList[StatePartition.Fresh]()
    try applySegment(ready, order, capacity, a, b, horizon, failures, acc, news)
    finally { publish(acc); fresh.addAll(news) }
  }

  private def applySegment(ready: StagedUpdates, order: Array[Long], capacity: Int, a: Int, b: Int, horizon: Long,
      failures: java.util.Queue[RejectedUpdate], acc: StatePartition.Accounting,
      fresh: java.util.List[StatePartition.Fresh]): Long = {
    var applied = 0L
    var i = a
    val chain = new ArrayBuffer[Int]()
    val single = new Array[Int](1) // reused: most chains are one update
    while (i < b) {
      val rank = SlotOrder.rankOf(order(i))
      val hash = SlotOrder.hashOf(order(i), capacity)
      var j = i + 1
      while (j < b && SlotOrder.rankOf(order(j)) == rank) j += 1
      if (j - i == 1) {
        single(0) = SlotOrder.indexOf(order(i))
        applied += applyChain(ready, single, hash, horizon, failures, acc, fresh)
      } else {
        // Keys sharing a hash: pick out each key's updates (already in arrival order).
        val idx = new Array[Int](j - i)
        var k = 0
        while (k < idx.length) { idx(k) = SlotOrder.indexOf(order(i + k)); k += 1 }
        val done = new Array[Boolean](idx.length)
        var p = 0
        while (p < idx.length) {
          if (!done(p)) {
            chain.clear()
            val key = ready.keys(idx(p))
            var q = p
            while (q < idx.length) {
              if (!done(q) && ready.keys(idx(q)) == key) { chain += idx(q); done(q) = true }
              q += 1
            }
            applied += applyChain(ready, StatePartition.byTime(chain.toArray, ready.times), hash, horizon, failures,
              acc,
              fresh)
          }
          p += 1
        }
      }
      i = j
    }
    applied
  }

  // One key's chain, in order; published with a compare-and-set, retried if a compaction got in between.
  // A key new to the partition is handed to `fresh` instead (see insertFresh). `hash` is the key's, from
  // the round's order: the look-up asks for the table's line without first waiting for the staged key.
  private def applyChain(ready: StagedUpdates, chain: Array[Int], hash: Int, horizon: Long,
      failures: java.util.Queue[RejectedUpdate],
      acc: StatePartition.Accounting, fresh: java.util.List[StatePartition.Fresh]): Long = {
    val key = ready.keys(chain(0))
    while (true) {
      val packed = entries.get(key, hash)
      val before = if (packed == null) null else new ValueSet(packed)
      val b = new ValueSet.Builder(if (before == null) ValueSet.Empty else before, chain.length, 0)
      var rejected: ArrayBuffer[RejectedUpdate] = null // only when the rule fails
      var applied = 0L
      var n = 0
      while (n < chain.length) {
        val c = chain(n)
        n += 1
        val t = ready.times(c)
        val incoming = ready.values(c)
        try {
          val previous = if (readsPrevious) b.valueAtOrBefore(t) else null
          // A transaction's delete (ValueSet.Deleted) is no value, as the group's chains read it.
          val v = rule(if (previous != null && previous.length == 0) null else previous, incoming)
          if (v == null) throw new SharedStateException(s"update rule '${rule.name}' returned null")
          b.put(t, v)
          applied += 1
        } catch {
          case e: Exception =>
            val o = ready.origins(c)
            if (rejected == null) rejected = new ArrayBuffer[RejectedUpdate](1)
            rejected += RejectedUpdate(
              key.bytes,
              t,
              incoming,
              s"${RejectedUpdate.RuleFailed}: ${e.getMessage}",
              if (o == null) "" else o.writer,
              if (o == null) -1L else o.epoch,
              if (o == null) Long.MinValue else o.updateProgress
            )
        }
      }
      // Rejections are handed over once the chain's result stands (a retry rebuilds them).
      if (applied == 0 && before == null) { if (rejected != null) rejected.foreach(failures.add); return 0L }
      val built = b.result()
      val after = if (horizon == Long.MinValue) built else compaction.compact(built, horizon)
      if (before == null) {
        fresh.add(new StatePartition.Fresh(key, after, built.size - after.size))
        if (rejected != null) rejected.foreach(failures.add)
        return applied
      }
      if (entries.replace(key, before.packed, after.packed)) {
        val c = changed
        if (c != null) c.add(key)
        acc.add(key, before, after, pairsDropped = built.size - after.size)
        if (rejected != null) rejected.foreach(failures.add)
        return applied
      }
    }
    0L
  }

  private def account(key: Key, before: ValueSet, after: ValueSet, pairsDropped: Int): Unit = {
    val acc = new StatePartition.Accounting
    acc.add(key, before, after, pairsDropped)
    publish(acc)
  }

  private def publish(acc: StatePartition.Accounting): Unit = {
    heldBytes.addAndGet(acc.held)
    rawHeld.addAndGet(acc.raw)
    pairs.addAndGet(acc.pairs)
    if (acc.compacted > 0) compactedPairs.addAndGet(acc.compacted)
  }

  def get(key: Key): ValueSet = {
    val packed = entries.get(key)
    if (packed == null) null else new ValueSet(packed)
  }

  /**
   * The entry of `key`, compacted below `horizon` first when the compaction rule has something to
   * drop (lazy compaction on access). Lock-free: the compacted set is published only if the entry did
   * not change meanwhile; either way the returned set answers fetches at or above the horizon alike.
   */
  def getCompacted(key: Key, horizon: Long): ValueSet = compacted(key, get(key), horizon)

  /** `set`, read from [[get]], compacted below `horizon` as [[getCompacted]] would. */
  def compacted(key: Key, set: ValueSet, horizon: Long): ValueSet =
    if (set == null || horizon == Long.MinValue) set
    else compactEntry(key, set, horizon)

  private def compactEntry(key: Key, set: ValueSet, horizon: Long): ValueSet = {
    val compacted = compaction.compact(set, horizon)
    if ((compacted ne set) && entries.replace(key, set.packed, compacted.packed)) {
      if (changed != null) {
        changedSwap.readLock().lock()
        try { val c = changed; if (c != null) c.add(key) }
        finally changedSwap.readLock().unlock()
      }
      account(key, set, compacted, set.size - compacted.size)
    }
    compacted
  }

  /**
   * One round of the periodic sweep: compacts up to `maxEntries` entries below `horizon`, resuming
   * where the previous round stopped (a weakly consistent iterator kept across rounds), so no round
   * ever walks the whole partition. Returns the entries examined; 0 if another sweep of this
   * partition is running.
   */
  def sweep(maxEntries: Int, horizon: Long): Int = {
    if (horizon == Long.MinValue || !sweepLock.tryLock()) 0
    else
      try {
        var examined = 0
        var restarted = false
        while (examined < maxEntries && !(restarted && (sweepCursor == null || !sweepCursor.hasNext))) {
          if (sweepCursor == null || !sweepCursor.hasNext) {
            sweepCursor = entries.cursor(); restarted = true
          }
          if (sweepCursor.hasNext) {
            val (key, packed) = sweepCursor.next()
            compactEntry(key, new ValueSet(packed), horizon)
            examined += 1
          }
        }
        examined
      } finally sweepLock.unlock()
  }

  /** Puts a restored entry (from a snapshot); only before the partition is in use. */
  private[core] def restore(key: Key, set: ValueSet): Unit = {
    val before = get(key)
    if (before == null) {
      entries.reserve(1)
      entries.insert(key, set.packed)
    } else entries.replace(key, before.packed, set.packed)
    account(key, before, set, 0)
  }

  /**
   * From now on, remembers which keys' entries change (applies and compactions), for delta
   * snapshots; see [[takeChangedKeys]]. Costs one set insert per changed entry; off unless called.
   */
  def trackChanges(): Unit = if (changed == null) changed = java.util.concurrent.ConcurrentHashMap.newKeySet[Key]()

  def tracksChanges: Boolean = changed != null

  /** Stops remembering changed keys (a live move's pre-copy is over, see State.preCopy). */
  private[core] def stopTracking(): Unit = {
    changedSwap.writeLock().lock()
    try changed = null
    finally changedSwap.writeLock().unlock()
  }

  /**
   * The keys changed since the previous call (or since tracking began), and tracking starts afresh.
   * Called under the State's commit lock (no applier runs). Null when not tracking.
   */
  private[core] def takeChangedKeys(): java.util.Set[Key] = {
    if (changed == null) null
    else {
      changedSwap.writeLock().lock()
      try { val old = changed; changed = java.util.concurrent.ConcurrentHashMap.newKeySet[Key](); old }
      finally changedSwap.writeLock().unlock()
    }
  }

  /** Puts keys taken by [[takeChangedKeys]] back (their snapshot was not written): the next delta holds them. */
  private[core] def returnChanged(keys: java.util.Set[Key]): Unit = {
    val c = changed
    if (c != null && keys != null) c.addAll(keys)
  }

  /** Forgets the staged updates (a snapshot chain's later link replaces them); only before the partition is in use. */
  private[core] def clearStaged(): Unit = staged.clear()

  /**
   * Forgets every entry and staged update (the partition was handed to another holder, see
   * State.handOver); its counters of held data drop to zero, those of past work stay.
   */
  private[core] def clear(): Unit = {
    entries.clear()
    staged.clear()
    heldBytes.set(0L); rawHeld.set(0L); pairs.set(0L)
    val c = changed
    if (c != null) c.clear()
  }

  def stagedCount: Int = staged.size
  def stagedBytes: Long = staged.bytes
  def keyCount: Int = entries.size

  /** Estimated heap bytes of the applied entries (see [[MemoryEstimate]]). */
  def bytesHeld: Long = heldBytes.get()

  /** Raw bytes of keys, timestamps and values applied. */
  def rawBytes: Long = rawHeld.get()
  def pairCount: Long = pairs.get()
  def updatesApplied: Long = appliedCount.get()
  def pairsCompacted: Long = compactedPairs.get()

  /** A weakly consistent view of the entries, for scans such as an as-of read. */
  def foreachEntry(f: (Key, ValueSet) => Unit): Unit = entries.foreach((k, p) => f(k, new ValueSet(p)))

  /** The staged updates in arrival order, for changelog and snapshot writers. */
  def foreachStaged(f: (Key, Long, Array[Byte]) => Unit): Unit = staged.foreach(f)
}

object StatePartition {
  private val NoChanges = new Array[Change](0)

  /** A key new to the partition with its first set, built by its chain, inserted by the committer. */
  private final class Fresh(val key: Key, val set: ValueSet, val pairsDropped: Int)

  /** Changes to a partition's counters, summed by one thread and published at once. */
  private final class Accounting {
    var held = 0L
    var raw = 0L
    var pairs = 0L
    var compacted = 0L
    def add(key: Key, before: ValueSet, after: ValueSet, pairsDropped: Int): Unit = {
      held += MemoryEstimate.entry(key, after) - MemoryEstimate.entry(key, before)
      raw += (if (after == null) 0L else key.bytes.length + after.payloadBytes) -
        (if (before == null) 0L else key.bytes.length + before.payloadBytes)
      pairs += (if (after == null) 0 else after.size) - (if (before == null) 0 else before.size)
      compacted += pairsDropped
    }
  }

  /** Below this many ready updates a partition applies on the calling thread. */
  val ParallelThreshold = 8192

  // Split points of `order` at rank-run boundaries, so every key's chain lies in one segment.
  private def segments(order: Array[Long], ready: StagedUpdates): Array[Int] = {
    val n = order.length
    val parts =
      if (n < ParallelThreshold) 1 else math.min(ForkJoinPool.getCommonPoolParallelism * 4, n / (ParallelThreshold / 4))
    val cuts = ArrayBuffer(0)
    var s = 1
    while (s < parts) {
      var at = math.max(cuts.last + 1, (n.toLong * s / parts).toInt)
      while (at < n && at > 0 && SlotOrder.rankOf(order(at)) == SlotOrder.rankOf(order(at - 1))) at += 1
      if (at < n) cuts += at
      s += 1
    }
    cuts += n
    cuts.toArray
  }

  // Stable sort of a chain (arrival order) by timestamp.
  private def byTime(chain: Array[Int], times: Array[Long]): Array[Int] = {
    var sorted = true
    var i = 1
    while (i < chain.length && sorted) { if (times(chain(i)) < times(chain(i - 1))) sorted = false; i += 1 }
    if (sorted) chain
    else {
      val boxed = chain.map(Integer.valueOf)
      Arrays.sort(boxed, (a: Integer, b: Integer) => java.lang.Long.compare(times(a), times(b))) // TimSort: stable
      boxed.map(_.intValue)
    }
  }
}
