package io.sharedstate.spark.cluster

import io.sharedstate.core.StateSpec

/**
 * Where a State lives: its definition, its incarnation (a dropped and re-created State gets a new
 * one, so a stale route is refused instead of reaching the wrong State), the owner of each partition
 * and its version (one more at each move of partitions: the hosts of a live move refuse stages
 * split by an older route, see HostService).
 */
private[sharedstate] final case class StateRoute(spec: StateSpec, incarnation: Long, owners: Array[HostId],
    version: Long = 0L) {
  def name: String = spec.name
  def hosts: Seq[HostId] = owners.distinct.toSeq.sortBy(_.executorId)
  def partitionsOf(host: HostId): Seq[Int] = owners.indices.filter(owners(_) == host)
}
