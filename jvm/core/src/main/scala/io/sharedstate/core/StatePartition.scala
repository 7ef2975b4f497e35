package io.sharedstate.core

import io.sharedstate.core.compaction.CompactionRule
import io.sharedstate.core.partial.{PartialChain, PartialRule}
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
  private val partialRule = rule match { case p: PartialRule => p; case _ => null }
  private val staged = new StagedUpdates
  private val heldBytes = new AtomicLong()
  private val rawHeld = new AtomicLong()
  private val pairs = new AtomicLong()
  private val appliedCount = new AtomicLong()
  private val compactedPairs = new AtomicLong()
  private val sweepLock = new ReentrantLock()
  // Keys whose entry changed since the last snapshot capture (null: not tracking, see trackChanges).
  // Appliers add under the commit lock, as captures swap it; a compaction (off the commit lock)
  // publishes and adds under the read lock, so a swap (write lock) never falls between the two.
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
    while (i < news.length) { order(i) = SlotOrder.entry(news(i).hash, capacity, i); i += 1 }
    SlotOrder.sort(order)
    val acc = new StatePartition.Accounting
    val c = changed
    i = 0
    while (i < order.length) {
      val f = news(SlotOrder.indexOf(order(i)))
      if (!entries.insert(f.key, f.hash, f.set.packed)) throw new IllegalStateException("a new key was inserted twice")
      if (c != null) c.add(f.key)
      acc.held += f.held; acc.raw += f.raw; acc.pairs += f.pairs; acc.compacted += f.pairsDropped
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
    // The segment's chains: members(starts(c) until starts(c + 1)) are chain c's staged updates, in
    // (time, arrival) order; one chain per key. A run of one rank is one whole hash: almost always one key.
    val members = new Array[Int](b - a)
    val starts = new Array[Int](b - a + 1)
    val hashes = new Array[Int](b - a)
    var chains = 0
    var m = 0
    var i = a
    while (i < b) {
      val rank = SlotOrder.rankOf(order(i))
      val hash = SlotOrder.hashOf(order(i), capacity)
      var j = i + 1
      while (j < b && SlotOrder.rankOf(order(j)) == rank) j += 1
      if (j - i == 1 || StatePartition.sameKey(ready, order, i, j)) {
        starts(chains) = m; hashes(chains) = hash; chains += 1
        var k = i
        while (k < j) { members(m) = SlotOrder.indexOf(order(k)); m += 1; k += 1 }
        if (j - i > 1) StatePartition.sortByTime(members, m - (j - i), m, ready.times)
      } else {
        // Keys sharing a hash: pick out each key's updates (already in arrival order).
        val done = new Array[Boolean](j - i)
        var p = 0
        while (p < j - i) {
          if (!done(p)) {
            val key = ready.keys(SlotOrder.indexOf(order(i + p)))
            starts(chains) = m; hashes(chains) = hash; chains += 1
            val first = m
            var q = p
            while (q < j - i) {
              if (!done(q) && ready.keys(SlotOrder.indexOf(order(i + q))) == key) {
                members(m) = SlotOrder.indexOf(order(i + q)); m += 1; done(q) = true
              }
              q += 1
            }
            StatePartition.sortByTime(members, first, m, ready.times)
          }
          p += 1
        }
      }
      i = j
    }
    starts(chains) = m
    // The chains in groups whose look-ups go first, staged (see KeyTable.Lookups), so the misses on the
    // stored keys and old sets of a group overlap instead of each chain waiting for its own in turn.
    val group = StatePartition.ApplyGroup
    val lookups = new KeyTable.Lookups(group)
    val sets = new Array[Array[Byte]](group)
    val stagedKeys = new Array[Key](group)
    val stagedValues = new Array[Array[Byte]](group)
    val builder = new ValueSet.Builder(null, ValueSet.Empty, 1, 0)
    var touched = 0
    var applied = 0L
    var from = 0
    while (from < chains) {
      val until = math.min(chains, from + group)
      // The staged updates' keys, values and times are asked for too: the round walks them in slot
      // order, not in the arrival order they were staged in, so each is a miss of its own. First their
      // slots in the staged arrays, then the key and value objects they point to, with the table's lines.
      var c = from
      while (c < until) {
        val first = members(starts(c))
        stagedKeys(c - from) = ready.keys(first)
        stagedValues(c - from) = ready.values(first)
        touched += ready.times(first).toInt
        c += 1
      }
      c = from
      while (c < until) {
        val key = stagedKeys(c - from)
        touched += key.hashCode + stagedValues(c - from).length
        entries.start(lookups, c - from, key, hashes(c))
        c += 1
      }
      c = from
      while (c < until) { sets(c - from) = lookups.finish(c - from); c += 1 }
      c = from
      while (c < until) {
        applied += applyChain(ready, members, starts(c), starts(c + 1), hashes(c), sets(c - from), builder, horizon,
          failures, acc, fresh)
        sets(c - from) = null; stagedKeys(c - from) = null; stagedValues(c - from) = null
        c += 1
      }
      from = until
    }
    if (touched == 42) StatePartition.sink = touched // keeps the touching reads
    applied
  }

  // One key's chain, members(from until until), in order; published with a compare-and-set, retried if a
  // compaction got in between. A key new to the partition is handed to `fresh` instead (see insertFresh).
  // `first` is the key's set as a staged look-up found it (null: none); a retry looks it up again with
  // `hash`, the key's, from the round's order.
  private def applyChain(ready: StagedUpdates, members: Array[Int], from: Int, until: Int, hash: Int,
      first: Array[Byte], b: ValueSet.Builder, horizon: Long, failures: java.util.Queue[RejectedUpdate],
      acc: StatePartition.Accounting, fresh: java.util.List[StatePartition.Fresh]): Long = {
    val key = ready.keys(members(from))
    var packed = first
    while (true) {
      val before = if (packed == null) null else new ValueSet(packed)
      b.reset(key.bytes, if (before == null) ValueSet.Empty else before)
      var rejected: ArrayBuffer[RejectedUpdate] = null // only when the rule fails
      def reject(c: Int, reason: String): Unit = {
        val o = ready.origins(c)
        if (rejected == null) rejected = new ArrayBuffer[RejectedUpdate](1)
        rejected += RejectedUpdate(
          key.bytes,
          ready.times(c),
          ready.values(c),
          s"${RejectedUpdate.RuleFailed}: $reason",
          if (o == null) "" else o.writer,
          if (o == null) -1L else o.epoch,
          if (o == null) Long.MinValue else o.updateProgress
        )
      }
      var applied = 0L
      // A long chain of a partial State's key: its instances' folds run in parallel (PartialChain).
      val length = until - from
      val byInstance = partialRule != null && length >= PartialChain.Threshold &&
        (b.size == 0 || b.lastTime <= ready.times(members(from)))
      val split =
        if (!byInstance) null
        else
          PartialChain(partialRule.inner, StatePartition.noDeleted(b.valueAtOrBefore(ready.times(members(from)))),
            Array.tabulate(length)(k => ready.values(members(from + k))))
      if (split != null) {
        var n = 0
        while (n < length) {
          val c = members(from + n)
          if (split.failures(n) != null) reject(c, split.failures(n))
          else { b.put(ready.times(c), split.sets(n)); applied += 1 }
          n += 1
        }
      } else {
        var n = from
        while (n < until) {
          val c = members(n)
          n += 1
          val t = ready.times(c)
          val incoming = ready.values(c)
          try {
            // A transaction's delete (ValueSet.Deleted) is no value, as the group's chains read it.
            val v = rule(if (readsPrevious) StatePartition.noDeleted(b.valueAtOrBefore(t)) else null, incoming)
            if (v == null) throw new SharedStateException(s"update rule '${rule.name}' returned null")
            b.put(t, v)
            applied += 1
          } catch { case e: Exception => reject(c, e.getMessage) }
        }
      }
      // Rejections are handed over once the chain's result stands (a retry rebuilds them).
      if (applied == 0 && before == null) { if (rejected != null) rejected.foreach(failures.add); return 0L }
      // The common case, newer pairs after the key's newest: appended in its array when it has room.
      if (before != null && b.appendInPlace(grown =>
          horizon != Long.MinValue && (compaction.compact(grown, horizon) ne grown))) {
        val c = changed
        if (c != null) c.add(key)
        acc.add(key, before, new ValueSet(before.packed, b.size), pairsDropped = 0)
        if (rejected != null) rejected.foreach(failures.add)
        return applied
      }
      val built = b.result(StatePartition.sparePairs(b.size))
      val after = if (horizon == Long.MinValue) built else compaction.compact(built, horizon)
      if (before == null) {
        fresh.add(new StatePartition.Fresh(key, hash, after, built.size - after.size))
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
      packed = entries.get(key, hash)
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

  /** Stage zero of a batched look-up of `key`: its home slot's lines asked for (see [[KeyTable.touchHome]]). */
  private[core] def touchHome(lookups: KeyTable.Lookups, key: Key): Unit = entries.touchHome(lookups, key.hashCode)

  /** Stage one of a batched look-up of `key` (see [[KeyTable.Lookups]]). */
  private[core] def start(lookups: KeyTable.Lookups, j: Int, key: Key): Unit =
    entries.start(lookups, j, key, key.hashCode)

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
    // Sealed first, so the applier cannot append to it in place meanwhile (see ValueSet): if it already
    // did, the set is not the key's whole set any more and stays. Published and noted under the read
    // lock: a tracking swap (write lock) never falls between the two, so a change published before a
    // snapshot's boundary is in the set that boundary takes.
    if ((compacted ne set) && ValueSet.seal(set)) {
      changedSwap.readLock().lock()
      try
        if (entries.replace(key, set.packed, compacted.packed)) {
          val c = changed
          if (c != null) c.add(key)
          account(key, set, compacted, set.size - compacted.size)
        }
      finally changedSwap.readLock().unlock()
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
  def trackChanges(): Unit = {
    changedSwap.writeLock().lock()
    try if (changed == null) changed = java.util.concurrent.ConcurrentHashMap.newKeySet[Key]()
    finally changedSwap.writeLock().unlock()
  }

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

  /**
   * Every entry as the key table stores it, the key object and the packed set, neither of them read,
   * in groups of up to `group` (see [[KeyTable.foreachStored]]): a walk over a large partition then
   * costs the table's own lines, and its caller overlaps the entries' cache misses
   * ([[codec.EntryWriter]]). [[foreachEntry]] reads each entry as it goes, one miss after the other.
   */
  private[core] def foreachStored(group: Int)(f: KeyTable.StoredGroup): Unit = entries.foreachStored(group)(f)

  /** The staged updates in arrival order, for changelog and snapshot writers. */
  def foreachStaged(f: (Key, Long, Array[Byte]) => Unit): Unit = staged.foreach(f)
}

object StatePartition {
  private val NoChanges = new Array[Change](0)

  /**
   * A key new to the partition with its first set, built by its chain, inserted by the committer. It
   * carries the key's hash and what the set adds to the counters, so inserting it reads neither the
   * key nor the set (in slot order they lie anywhere in memory).
   */
  private final class Fresh(val key: Key, val hash: Int, val set: ValueSet, val pairsDropped: Int) {
    val held: Long = MemoryEstimate.entry(key, set)
    val raw: Long = key.bytes.length + set.payloadBytes
    val pairs: Int = set.size
  }

  /** Changes to a partition's counters, summed by one thread and published at once. */
  private final class Accounting {
    var held = 0L
    var raw = 0L
    var pairs = 0L
    var compacted = 0L
    def add(key: Key, before: ValueSet, after: ValueSet, pairsDropped: Int): Unit = {
      if (before != null && after != null) {
        // A set replaced or grown: the key's own bytes cancel out (and are not read: a miss per key).
        held += after.heldBytes - before.heldBytes
        raw += after.payloadBytes - before.payloadBytes
      } else {
        held += MemoryEstimate.entry(key, after) - MemoryEstimate.entry(key, before)
        raw += (if (after == null) 0L else key.bytes.length + after.payloadBytes) -
          (if (before == null) 0L else key.bytes.length + before.payloadBytes)
      }
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

  /**
   * Room for more pairs a new set array gets (see ValueSet): a quarter of its pairs, at least one. Half
   * of a key's next versions are then appended in place, and a set that stops growing wastes at most a
   * fifth of its array (none when it stops at a full capacity).
   */
  private def sparePairs(pairs: Int): Int = math.max(1, pairs >> 2)

  /** Chains of one apply round's segment staged for their look-ups at once (see applySegment). */
  @volatile private var sink = 0

  private val ApplyGroup = 32

  // Whether the staged updates of order[i, j) (one rank) all have the same key.
  private def sameKey(ready: StagedUpdates, order: Array[Long], i: Int, j: Int): Boolean = {
    val key = ready.keys(SlotOrder.indexOf(order(i)))
    var k = i + 1
    while (k < j && ((ready.keys(SlotOrder.indexOf(order(k))) eq key) ||
        ready.keys(SlotOrder.indexOf(order(k))) == key)) k += 1
    k == j
  }

  // A transaction's delete (ValueSet.Deleted, an empty value) is no value to a rule.
  private def noDeleted(v: Array[Byte]): Array[Byte] = if (v != null && v.length == 0) null else v

  // A stable sort of a chain (arrival order) by timestamp, for tests: see sortByTime.
  private[core] def byTime(chain: Array[Int], times: Array[Long]): Array[Int] = {
    val sorted = chain.clone()
    sortByTime(sorted, 0, sorted.length, times)
    sorted
  }

  // Stable sort of members[from, until) (a chain in arrival order) by timestamp, in place. A hot key's
  // chain is long: when the chain's time span and its length fit in a long together, (time - min,
  // position) pairs sort as primitives.
  private def sortByTime(members: Array[Int], from: Int, until: Int, times: Array[Long]): Unit = {
    var sorted = true
    var min = Long.MaxValue
    var max = Long.MinValue
    var i = from
    while (i < until) {
      val t = times(members(i))
      if (i > from && t < times(members(i - 1))) sorted = false
      if (t < min) min = t
      if (t > max) max = t
      i += 1
    }
    val length = until - from
    val bits = 32 - Integer.numberOfLeadingZeros(math.max(length - 1, 1))
    if (sorted) ()
    else if (max - min >= 0 && (max - min) < (1L << (63 - bits))) {
      val packed = new Array[Long](length)
      i = 0
      while (i < length) { packed(i) = ((times(members(from + i)) - min) << bits) | i; i += 1 }
      Arrays.sort(packed)
      val original = Arrays.copyOfRange(members, from, until)
      val mask = (1L << bits) - 1
      i = 0
      while (i < length) { members(from + i) = original((packed(i) & mask).toInt); i += 1 }
    } else {
      val boxed = Array.tabulate(length)(k => Integer.valueOf(members(from + k)))
      Arrays.sort(boxed, (a: Integer, b: Integer) => java.lang.Long.compare(times(a), times(b))) // TimSort: stable
      var k = 0
      while (k < boxed.length) { members(from + k) = boxed(k).intValue; k += 1 }
    }
  }
}
