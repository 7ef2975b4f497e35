package io.sharedstate.spark.cluster

import io.sharedstate.core.{Change, ChangeSubscription, Key, SharedStateException, State}
import HostFeedMessages._
import java.util.{Collections, WeakHashMap}

/**
 * A host's side of the per-host change feed: the host's core [[State]] (which holds the partitions the
 * host owns; the others stay empty) runs its own ChangeFeed while a subscription is open, exactly as
 * in local mode, so a U step costs the keys that round touched on this host and nothing scans it.
 *
 * Each subscription remembers the partitions the host owned when it opened: its pairs from before it
 * joined are read from those only, and should the host adopt a lost host's partitions later, their
 * pairs are filtered out of it (the query re-plans on the new layout; see docs/change-stream.md). Should
 * one of its partitions move away live, reading it fails as "moved" and the reader scans the
 * partitions where they are now (see changes.HostChangeFeeds.read); so does a partition that moved
 * away and came back since the subscription opened: the pairs it got elsewhere meanwhile never went
 * through this host's feed.
 */
private[sharedstate] object HostFeeds {
  // Weak keys: a subscription closed with its State (a drop) leaves no entry behind.
  private val covered = Collections.synchronizedMap(new WeakHashMap[ChangeSubscription, Covered]())

  /** A subscription's partitions, and the host's route version when it opened. */
  private final case class Covered(partitions: Array[Int], openedAt: Long)

  /**
   * Which of a State's partitions the host owns now, which it handed to another host, and for each
   * partition it ever handed over the route version of its last hand-over (versions only go up; the
   * host's own `routeVersion` is at least that of every move it took part in).
   */
  final case class Ownership(owned: Seq[Int], movedAway: Set[Int], handedOverAt: Map[Int, Long], routeVersion: Long)

  /** Answers `request` for `state`, of which this host owns `now.owned`. */
  def serve(state: State, now: Ownership, request: HostFeedRequest): Any = request match {
    case OpenHostFeed(_, _, from) =>
      val partitions = now.owned.sorted.toArray
      val sub = state.subscribeChanges(from, partitions.toSeq)
      covered.put(sub, Covered(partitions, now.routeVersion))
      HostFeedOpened(sub.id, partitions)
    case ReadHostFeed(_, _, id, from, until) =>
      val sub = state.changeSubscription(id)
      val changes = sub.changes(from, until)
      val Covered(partitions, openedAt) = covered.getOrDefault(sub, Covered(Array.empty, Long.MaxValue))
      // A partition it covers moved to another host (a live move), or left and came back (its pairs of
      // the meantime are not in this feed): the reader scans the partitions where they are now instead.
      partitions.find(p => now.movedAway(p) || now.handedOverAt.get(p).exists(_ > openedAt))
        .foreach(p => throw new PartitionMovedException(state.name, p, "this host"))
      // Pairs of partitions it does not cover: adopted ones, or ones that came and went since it opened.
      val foreign = !partitions.sameElements(now.owned.sorted) || now.handedOverAt.valuesIterator.exists(_ > openedAt)
      if (foreign) only(changes, partitions.toSet, state.partitionCount) else changes
    case AwaitHostFeed(_, _, id, beyond, waitMs) =>
      val sub = state.changeSubscription(id)
      if (waitMs > 0) sub.awaitBeyond(beyond, waitMs) else sub.completeThrough
    case CommitHostFeed(_, _, id, until) => find(state, id).foreach(_.commit(until)); true
    case CloseHostFeed(_, _, id) => find(state, id).foreach { sub => covered.remove(sub); sub.close() }; true
  }

  private def find(state: State, id: Long): Option[ChangeSubscription] =
    try Some(state.changeSubscription(id))
    catch { case _: SharedStateException => None }

  private def only(changes: Array[Change], partitions: Set[Int], count: Int): Array[Change] =
    changes.filter(c => partitions.contains(new Key(c.key).partition(count)))
}
