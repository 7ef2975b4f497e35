package io.sharedstate.spark.cluster

import scala.collection.mutable

/**
 * Which partitions of a State move where so that the live hosts hold them evenly (counts differ by
 * at most one) with as few moves as possible: a live host keeps up to its share of what it holds,
 * the hosts holding most now get the larger shares, and what is left over (and what `leaving` hosts
 * hold: a decommissioned executor, the driver once executors exist) goes to the hosts below their
 * share. Partitions of a host that is neither live nor leaving (a lost executor) stay where they are:
 * they cannot be handed over (a durable State's are rebuilt from its tables instead).
 */
private[sharedstate] object RebalancePlan {

  /** Partition -> its new owner, for the partitions that move. */
  def apply(owners: IndexedSeq[HostId], live: Seq[HostId], leaving: HostId => Boolean): Map[Int, HostId] =
    if (live.isEmpty) Map.empty
    else {
      val hosts = live.distinct.sortBy(_.executorId)
      val isLive = hosts.toSet
      val movable = owners.indices.filter(p => isLive(owners(p)) || leaving(owners(p)))
      val count = mutable.Map(hosts.map(h => h -> movable.count(owners(_) == h)): _*)
      val (base, extra) = (movable.size / hosts.size, movable.size % hosts.size)
      val share = hosts.sortBy(h => (-count(h), h.executorId)).zipWithIndex.map { case (h, i) =>
        h -> (base + (if (i < extra) 1 else 0))
      }.toMap
      val kept = mutable.Map(hosts.map(_ -> 0): _*)
      val moving = movable.filter { p =>
        val o = owners(p)
        if (isLive(o) && kept(o) < share(o)) { kept(o) += 1; false }
        else true
      }
      val free = hosts.flatMap(h => Seq.fill(share(h) - kept(h))(h))
      moving.zip(free).toMap
    }
}
