package io.sharedstate.core.esg

import io.sharedstate.core.SharedStateException

import java.util.concurrent.atomic.{AtomicBoolean, AtomicReferenceArray}
import java.util.concurrent.locks.LockSupport

/**
 * Elastic ScaleGate (STRETCH): a lock-free, timestamp-ordered skip list that merges the sorted streams
 * of many sources and delivers every ready tuple exactly once to every reader, all readers in the same
 * order. Sources and readers are slots `0 until maxSources` and `0 until maxReaders`; each slot is
 * used by one thread at a time.
 *
 *  - `add` and `get` are lock-free (`get` is wait-free); `add` waits only for back-pressure.
 *  - A tuple is ready once its source has added a later node: a source's last node is held back,
 *    because the next tuple of another, slower source may still belong before it. An idle source
 *    releases its last tuple with `heartbeat`.
 *  - The merged order is by (timestamp, source slot), then by each source's add order; it depends on
 *    the sources' inputs only, not on thread timing.
 *  - Back-pressure: a source waits while `capacityPerSource` of its nodes are not yet passed by some
 *    reader. A source whose last node holds the readers back has at most one such node, so it never
 *    waits for them (no deadlock while readers keep calling `get`).
 *  - Nothing but reader positions and sources' search fingers points into the list, so consumed nodes
 *    become garbage.
 *
 * Membership methods follow the paper: concurrent calls of one method have one winner; a call returns
 * true only if it won and every slot it names was newly added (or removed). A loser returns false once
 * the winner is done, so its caller can rely on the winner's change (this keeps the calls
 * linearizable). Different membership methods are serialised by a lock; `add` and `get` never take it.
 */
final class ElasticScaleGate[T] private (
    val maxSources: Int,
    val maxReaders: Int,
    val capacityPerSource: Int,
    levels: Int,
    seed: Int) {
  import ElasticScaleGate._

  private val sources = new AtomicReferenceArray[SourceHandle](maxSources)
  private val readers = new AtomicReferenceArray[ReaderHandle](maxReaders)

  /** Nodes inserted by earlier holders of a source slot; guarded by `membership`. */
  private val retiredInserted = new Array[Long](maxSources)
  private val addingReaders = new AtomicBoolean
  private val removingReaders = new AtomicBoolean
  private val addingSources = new AtomicBoolean
  private val removingSources = new AtomicBoolean
  private val membership = new Object

  private def init(initialSources: Int, initialReaders: Int, startTime: Long): Unit = {
    val head = EsgNode.head(levels) // not kept in a field: readers leave it behind for the GC
    for (s <- 0 until initialSources) {
      val h = new SourceHandle(s, Array.fill(levels)(head), startTime, 0L, seed * 31 + s)
      startWithDummy(h, startTime)
      sources.set(s, h)
    }
    for (r <- 0 until initialReaders) readers.set(r, new ReaderHandle(r, head, new Array[Long](maxSources)))
  }

  // ---- sources -------------------------------------------------------------------------------

  /** Adds a tuple for `source`, waiting while back-pressure holds the source. */
  def add(timestamp: Long, payload: T, source: Int): Unit = {
    val h = activeSource(source)
    checkOrder(h, timestamp)
    awaitSpace(h)
    append(h, EsgNode.TUPLE, timestamp, new EsgTuple(timestamp, payload, source, false))
  }

  /** Like `add`, but returns false instead of waiting when back-pressure holds the source. */
  def tryAdd(timestamp: Long, payload: T, source: Int): Boolean = {
    val h = activeSource(source)
    checkOrder(h, timestamp)
    hasSpace(h) && { append(h, EsgNode.TUPLE, timestamp, new EsgTuple(timestamp, payload, source, false)); true }
  }

  /**
   * Promises that `source` adds nothing earlier than `timestamp`: it releases the source's last tuple
   * and is delivered to every reader as a watermark (once the source adds again).
   */
  def heartbeat(timestamp: Long, source: Int): Unit = {
    val h = activeSource(source)
    checkOrder(h, timestamp)
    awaitSpace(h)
    append(h, EsgNode.WATERMARK, timestamp, new EsgTuple[T](timestamp, null.asInstanceOf[T], source, true))
  }

  /**
   * Whether the next `add` or `heartbeat` of `source` goes through without waiting for back-pressure
   * (called from the source's thread). Lets a source that must not wait make room first, e.g. by
   * draining readers or releasing the source that holds them back.
   */
  def hasRoom(source: Int): Boolean = hasSpace(activeSource(source))

  /** The smallest timestamp `source` may add next (for a new source: its start time). */
  def lowerBound(source: Int): Long = activeSource(source).lastTs

  // ---- readers -------------------------------------------------------------------------------

  /** The next ready tuple or watermark for `reader`, or null if none is ready yet. */
  def get(reader: Int): EsgTuple[T] = {
    val node = EsgList.nextReady(activeReader(reader))
    if (node == null) null else node.item.asInstanceOf[EsgTuple[T]]
  }

  // ---- membership ----------------------------------------------------------------------------

  /**
   * Called by reader `caller`: the readers in `newReaders` that are not readers yet start exactly
   * where `caller` is, so they receive what `caller` receives from its next `get` on.
   */
  def addReaders(newReaders: Set[Int], caller: Int): Boolean = {
    newReaders.foreach(checkSlot("reader", _, maxReaders))
    val from = activeReader(caller)
    oneWinner(addingReaders) {
      newReaders.foldLeft(true) { (all, r) =>
        if (readers.get(r) != null) false else { readers.set(r, from.copyAs(r)); all }
      }
    }
  }

  /** Called by a reader: removes the readers in `gone`. They must not call `get` any more. */
  def removeReaders(gone: Set[Int]): Boolean = {
    gone.foreach(checkSlot("reader", _, maxReaders))
    oneWinner(removingReaders) {
      val remaining = (0 until maxReaders).count(r => readers.get(r) != null && !gone(r))
      if (remaining == 0) {
        throw new SharedStateException(s"removeReaders(${gone.toSeq.sorted.mkString(",")}) would leave " +
          "the ESG with no reader; at least one must remain, as new readers start at a reader's position.")
      }
      gone.foldLeft(true) { (all, r) =>
        if (readers.get(r) == null) false else { readers.set(r, null); all }
      }
    }
  }

  /**
   * Called by source `caller` (not while it adds): the sources in `newSources` that are not sources
   * yet join. Each gets a dummy node right after the caller's last node, so readers wait for it from
   * there on; its adds must be later than the caller's last timestamp (see `lowerBound`).
   */
  def addSources(newSources: Set[Int], caller: Int): Boolean = {
    newSources.foreach(checkSlot("source", _, maxSources))
    val from = activeSource(caller)
    if (from.lastTs == Long.MaxValue) {
      throw new SharedStateException(s"source $caller is at the end of time (Long.MaxValue); " +
        "a source added after it could never add.")
    }
    oneWinner(addingSources) {
      newSources.foldLeft(true) { (all, s) =>
        if (sources.get(s) != null) false
        else {
          val h = new SourceHandle(s, from.fingers.clone(), from.lastTs + 1, retiredInserted(s), seed * 31 + s)
          startWithDummy(h, from.lastTs + 1)
          sources.set(s, h)
          all
        }
      }
    }
  }

  /**
   * Called by a source: removes the sources in `gone`, which must have stopped adding. A flush node
   * at each one's last timestamp releases its last tuple.
   */
  def removeSources(gone: Set[Int]): Boolean = {
    gone.foreach(checkSlot("source", _, maxSources))
    oneWinner(removingSources) {
      val remaining = (0 until maxSources).count(s => sources.get(s) != null && !gone(s))
      if (remaining == 0) {
        throw new SharedStateException(s"removeSources(${gone.toSeq.sorted.mkString(",")}) would leave " +
          "the ESG with no source; at least one must remain, as new sources start at a source's position.")
      }
      gone.foldLeft(true) { (all, s) =>
        val h = sources.get(s)
        if (h == null) false
        else {
          sources.set(s, null) // a late add by the removed source now fails fast
          val last = h.written // volatile read: the source's last add happened before
          val flush = new EsgNode(last.ts, s, EsgNode.FLUSH, null, h, 1)
          EsgList.insert(h.fingers, flush)
          h.written = flush
          retiredInserted(s) = h.inserted + 1
          java.util.Arrays.fill(h.fingers.asInstanceOf[Array[AnyRef]], null)
          all
        }
      }
    }
  }

  // ---- inspection ----------------------------------------------------------------------------

  def activeSources: Set[Int] = (0 until maxSources).filter(sources.get(_) != null).toSet

  def activeReaders: Set[Int] = (0 until maxReaders).filter(readers.get(_) != null).toSet

  /** Nodes of `source` that some reader has not passed yet (called from the source's thread). */
  def buffered(source: Int): Long = {
    val h = activeSource(source)
    h.inserted - minPassed(h)
  }

  // ---- internals -----------------------------------------------------------------------------

  private def startWithDummy(h: SourceHandle, ts: Long): Unit = {
    val dummy = new EsgNode(ts, h.slot, EsgNode.DUMMY, null, h, 1)
    h.written = dummy // before linking: readers that reach it must stop there
    EsgList.insert(h.fingers, dummy)
    h.lastTs = ts
    h.inserted += 1
    h.limit = 0L // the first add reads the readers' counts
  }

  private def append(h: SourceHandle, kind: Byte, ts: Long, item: EsgTuple[T]): Unit = {
    val node = new EsgNode(ts, h.slot, kind, item, h, h.randomLevel(levels))
    EsgList.insert(h.fingers, node)
    h.lastTs = ts
    h.inserted += 1
    h.written = node // volatile publish: the previous node becomes ready
  }

  private def checkOrder(h: SourceHandle, ts: Long): Unit =
    if (ts < h.lastTs) {
      throw new SharedStateException(s"source ${h.slot} added timestamp $ts after ${h.lastTs}; each " +
        "source must add in non-decreasing timestamp order (a new source starts after its lowerBound).")
    }

  private def hasSpace(h: SourceHandle): Boolean =
    h.inserted < h.limit || {
      h.limit = minPassed(h) + capacityPerSource
      h.inserted < h.limit
    }

  private def minPassed(h: SourceHandle): Long = {
    var min = h.inserted
    var r = 0
    while (r < maxReaders) {
      val rh = readers.get(r)
      if (rh != null) min = math.min(min, rh.passedOf(h.slot))
      r += 1
    }
    min
  }

  private def awaitSpace(h: SourceHandle): Unit = {
    var round = 0
    while (!hasSpace(h)) {
      if (round < 64) Thread.onSpinWait()
      else if (round < 128) Thread.`yield`()
      else {
        LockSupport.parkNanos(BackPressureParkNanos)
        if (Thread.interrupted()) {
          throw new InterruptedException(s"interrupted while source ${h.slot} waited for ESG space")
        }
      }
      round += 1
    }
  }

  private def oneWinner(flag: AtomicBoolean)(body: => Boolean): Boolean =
    if (!flag.compareAndSet(false, true)) {
      while (flag.get()) Thread.onSpinWait() // lost: wait until the winner's change is visible
      false
    } else {
      try membership.synchronized(body)
      finally flag.set(false)
    }

  private def activeSource(source: Int): SourceHandle = {
    checkSlot("source", source, maxSources)
    val h = sources.get(source)
    if (h == null) {
      throw new SharedStateException(s"source $source is not a source of this ESG; active sources: " +
        activeSources.toSeq.sorted.mkString("{", ",", "}") + " (join with addSources).")
    }
    h
  }

  private def activeReader(reader: Int): ReaderHandle = {
    checkSlot("reader", reader, maxReaders)
    val h = readers.get(reader)
    if (h == null) {
      throw new SharedStateException(s"reader $reader is not a reader of this ESG; active readers: " +
        activeReaders.toSeq.sorted.mkString("{", ",", "}") + " (join with addReaders).")
    }
    h
  }
}

object ElasticScaleGate {

  /** Skip-list height: fingers reach about 2^(levels-1) nodes back, which bounds what they retain. */
  val DefaultLevels = 12
  private val BackPressureParkNanos = 50000L

  /**
   * @param sources           initial sources: slots `0 until sources`
   * @param readers           initial readers: slots `0 until readers`
   * @param maxSources        number of source slots (the maximum parallelism of the writers)
   * @param maxReaders        number of reader slots
   * @param capacityPerSource nodes of one source that may wait for the slowest reader (at least 2)
   * @param startTime         the smallest timestamp the initial sources may add
   * @param levels            skip-list height, in [1, 30]
   * @param seed              seeds the skip-list levels, so runs are reproducible
   */
  def apply[T](
      sources: Int,
      readers: Int,
      maxSources: Int = 64,
      maxReaders: Int = 64,
      capacityPerSource: Int = 4096,
      startTime: Long = Long.MinValue,
      levels: Int = DefaultLevels,
      seed: Int = 1): ElasticScaleGate[T] = {
    if (maxSources < 1) throw new SharedStateException(s"maxSources must be at least 1, got $maxSources.")
    if (maxReaders < 1) throw new SharedStateException(s"maxReaders must be at least 1, got $maxReaders.")
    if (sources < 1 || sources > maxSources) {
      throw new SharedStateException(s"sources must be in [1, maxSources = $maxSources], got $sources.")
    }
    if (readers < 1 || readers > maxReaders) {
      throw new SharedStateException(s"readers must be in [1, maxReaders = $maxReaders], got $readers.")
    }
    if (capacityPerSource < 2) {
      throw new SharedStateException(s"capacityPerSource must be at least 2 (a source's last node is " +
        s"held back until its next add), got $capacityPerSource.")
    }
    if (levels < 1 || levels > 30) throw new SharedStateException(s"levels must be in [1, 30], got $levels.")
    val esg = new ElasticScaleGate[T](maxSources, maxReaders, capacityPerSource, levels, seed)
    esg.init(sources, readers, startTime)
    esg
  }

  private def checkSlot(kind: String, slot: Int, max: Int): Unit =
    if (slot < 0 || slot >= max) {
      throw new SharedStateException(s"$kind slot must be in [0, $max), got $slot.")
    }
}
