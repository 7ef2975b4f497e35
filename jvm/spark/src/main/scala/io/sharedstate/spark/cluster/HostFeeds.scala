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
 * partitions where they are now (see changes.HostChangeFeeds.read).
 */
private[sharedstate] object HostFeeds {
  // Weak keys: a subscription closed with its State (a drop) leaves no entry behind.
  private val covered = Collections.synchronizedMap(new WeakHashMap[ChangeSubscription, Array[Int]]())

  /** Answers `request` for `state`, of which this host owns `owned` now. */
  def serve(state: State, owned: Seq[Int], movedAway: Set[Int], request: HostFeedRequest): Any = request match {
    case OpenHostFeed(_, _, from) =>
      val partitions = owned.sorted.toArray
      val sub = state.subscribeChanges(from, partitions.toSeq)
      covered.put(sub, partitions)
      HostFeedOpened(sub.id, partitions)
    case ReadHostFeed(_, _, id, from, until) =>
      val sub = state.changeSubscription(id)
      val changes = sub.changes(from, until)
      val partitions = covered.getOrDefault(sub, Array.empty)
      // A partition it covers moved to another host (a live move): the reader scans the new owner instead.
      partitions.find(movedAway).foreach(p => throw new PartitionMovedException(state.name, p, "this host"))
      if (partitions.sameElements(owned.sorted)) changes else only(changes, partitions.toSet, state.partitionCount)
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
