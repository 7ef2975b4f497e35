package io.sharedstate.core

import io.sharedstate.core.esg.ElasticScaleGate
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong
import scala.jdk.CollectionConverters._

/**
 * The change stream of one State through an Elastic ScaleGate (STRETCH): the ESG's sources are the
 * State's partitions, its readers the open [[ChangeSubscription]]s plus an anchor reader. Each time
 * U advances, the committer adds the pairs that became final (from [[StatePartition.applyCollecting]])
 * and heartbeats every source at the new U, so every subscription receives every pair below U once,
 * merged across partitions in (timestamp, partition, key bytes) order: the order of the ESG (timestamp,
 * then source slot, then each source's add order) and of [[State.mergedChanges]], which serves what
 * came before a subscription joined.
 *
 * Created by the State when the first subscription opens and dropped when the last one closes, so a
 * State nobody subscribes to pays nothing. Every method but the subscription's own reads runs under
 * the State's commit lock (one committer at a time); a subscription reads its ESG slot under its own
 * lock, which the committer also takes when it drains that slot, so each slot has one thread at a time.
 *
 * The committer never waits for a subscription: a micro-batch query polls only when Spark plans a
 * batch, so instead of waiting on back-pressure it drains the lagging subscriptions into their own
 * buffers, and releases a source whose last node holds the readers back with a heartbeat it is
 * entitled to (see `makeRoom`).
 */
final class ChangeFeed private[core] (stateName: String, partitions: Int, startU: Long,
    capacityPerSource: Int = ChangeFeed.DefaultCapacity, maxSubscriptions: Int = ChangeFeed.DefaultMaxSubscriptions) {
  import ChangeFeed.Anchor

  private val esg = ElasticScaleGate[Change](sources = partitions, readers = 1, maxSources = partitions,
    maxReaders = maxSubscriptions + 1, capacityPerSource = capacityPerSource, startTime = startU)
  private val subscriptions = new ConcurrentHashMap[Int, ChangeSubscription]() // by reader slot
  private val ids = new AtomicLong()
  private val monitor = new Object
  @volatile private var reached: Long = startU
  @volatile private var closedWith: String = null
  @volatile private var drainsForRoom = 0L
  @volatile private var releasesForRoom = 0L

  /** How often the committer drained the readers, and released a blocking source, to make room. */
  private[core] def roomCounts: (Long, Long) = (drainsForRoom, releasesForRoom)

  /** Every pair below it has been added and released to the readers (the U of the last round). */
  def frontier: Long = reached

  def subscriptionCount: Int = subscriptions.size

  // ---- committer side (under the State's commit lock) ----

  /**
   * Adds a round's newly final pairs, `newly(p)` those of partition p in (timestamp, key bytes) order,
   * all below `newU`, then releases them with a heartbeat at `newU` on every source. A round at or
   * below the frontier (a reopened State, see docs) adds nothing: offsets never go back.
   */
  private[core] def publish(newly: Array[Array[Change]], newU: Long): Unit = if (newU > reached) {
    val from = reached
    // Sources add in merged (timestamp, partition) order: that is what entitles makeRoom's heartbeats.
    val next = new Array[Int](partitions)
    val heads = new java.util.PriorityQueue[Integer](
      math.max(1, partitions),
      (a: Integer, b: Integer) => {
        val byTime = java.lang.Long.compare(newly(a)(next(a)).time, newly(b)(next(b)).time)
        if (byTime != 0) byTime else Integer.compare(a, b)
      }
    )
    for (p <- 0 until partitions) {
      val changes = newly(p)
      while (next(p) < changes.length && changes(next(p)).time < from)
        next(p) += 1 // below the frontier: delivered already
      if (next(p) < changes.length) heads.add(p)
    }
    while (!heads.isEmpty) {
      val p: Int = heads.poll()
      val c = newly(p)(next(p))
      makeRoom(p, m => if (m > p) c.time else c.time + 1)
      esg.add(c.time, c, p)
      next(p) += 1
      if (next(p) < newly(p).length) heads.add(p)
    }
    for (p <- 0 until partitions) {
      makeRoom(p, _ => newU)
      esg.heartbeat(newU, p)
    }
    reached = newU
    drainAnchor() // new subscriptions start at the anchor: right after every pair below newU
    monitor.synchronized(monitor.notifyAll())
  }

  /**
   * Opens a subscription at the anchor's position, so it receives from the feed exactly the pairs at
   * or above the frontier; `before` reads the pairs in [from, frontier) that it needs from the State.
   */
  private[core] def subscribe(from: Long, before: (Long, Long) => Array[Change],
      onClose: ChangeSubscription => Unit): ChangeSubscription = {
    checkOpen()
    val slot = (1 to maxSubscriptions).find(s => !subscriptions.containsKey(s)).getOrElse(
      throw new SharedStateException(s"State '$stateName' has $maxSubscriptions change subscriptions open, the most " +
        "one State serves; stop a change-stream query first."))
    if (!esg.addReaders(Set(slot), Anchor)) {
      throw new IllegalStateException(s"change feed of State '$stateName': reader slot $slot was taken")
    }
    val sub = new ChangeSubscription(this, ids.incrementAndGet(), slot, from, reached, before, onClose)
    subscriptions.put(slot, sub)
    sub
  }

  private[core] def unsubscribe(sub: ChangeSubscription): Unit =
    if (subscriptions.remove(sub.slot, sub)) {
      sub.markClosed()
      esg.removeReaders(Set(sub.slot))
    }

  private[core] def subscription(id: Long): Option[ChangeSubscription] = subscriptions.values.asScala.find(_.id == id)

  /** The State is gone: subscriptions fail from now on. */
  private[core] def close(reason: String): Unit = {
    closedWith = reason
    subscriptions.values.asScala.toSeq.foreach(unsubscribe)
    monitor.synchronized(monitor.notifyAll())
  }

  // ---- reader side ----

  /** Reads what `slot` has ready (the caller holds the slot's subscription lock). */
  private[core] def drainSlot(slot: Int, into: Change => Unit): Unit = {
    var t = esg.get(slot)
    while (t != null) {
      if (!t.isWatermark) into(t.payload)
      t = esg.get(slot)
    }
  }

  /** Waits (at most `timeoutMs`) until the frontier passes `beyond`; returns the frontier. */
  private[core] def awaitBeyond(beyond: Long, timeoutMs: Long): Long = {
    val deadline = System.nanoTime() + timeoutMs * 1000000L
    monitor.synchronized {
      var left = timeoutMs
      while (reached <= beyond && left > 0 && closedWith == null) {
        monitor.wait(left)
        left = (deadline - System.nanoTime()) / 1000000L
      }
    }
    checkOpen()
    reached
  }

  private[core] def checkOpen(): Unit = {
    val why = closedWith
    if (why != null) throw new SharedStateException(s"The change feed of State '$stateName' is closed: $why")
  }

  // ---- internals ----

  private def drainAnchor(): Unit = drainSlot(Anchor, _ => ())

  /**
   * Makes sure source `p` can add without waiting. First every reader is drained (subscriptions into
   * their buffers). If `p` is still full, its nodes wait behind the earliest last node of another
   * source m (a source's last node is held back): m is heartbeated at `promise(m)`, a timestamp it
   * will not add below because sources add in merged order (m > p may still add at the current
   * timestamp, m < p only later). After the drain m holds a single unread node, so the heartbeat never
   * waits; each heartbeat moves one blocker behind p's last node, so at most partitions - 1 are needed.
   */
  private def makeRoom(p: Int, promise: Int => Long): Unit = {
    var released = 0
    while (!esg.hasRoom(p)) {
      drainAnchor()
      subscriptions.values.forEach(_.drainFromCommitter())
      drainsForRoom += 1
      if (!esg.hasRoom(p)) {
        val m = (0 until partitions).filter(_ != p).minBy(s => (esg.lowerBound(s), s))
        val at = promise(m)
        if (released >= partitions || at < esg.lowerBound(m) || !esg.hasRoom(m)) {
          throw new IllegalStateException(s"change feed of State '$stateName': source $p is full and source $m " +
            s"cannot be released (at ${EventTime.show(at)}, after ${EventTime.show(esg.lowerBound(m))})")
        }
        esg.heartbeat(at, m)
        released += 1
        releasesForRoom += 1
      }
    }
  }
}

object ChangeFeed {

  /** The feed's own reader, drained after each round: new subscriptions start at its position. */
  private val Anchor = 0

  /** Pairs of one partition that may wait for the slowest subscription before the committer drains it. */
  val DefaultCapacity = 4096
  val DefaultMaxSubscriptions = 63
}
