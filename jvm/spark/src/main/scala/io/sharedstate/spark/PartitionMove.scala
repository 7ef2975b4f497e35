package io.sharedstate.spark

/**
 * Partitions of a State that moved from executor `from` to executor `to`. `reason` `lost`: a durable
 * State's partitions rebuilt from its tables after `from` was lost, in `millis`. Else a live move
 * (`move`: State.move; `rebalance`: State.rebalance; `executor added`; `decommission`): `millis` is the
 * hand-over's pause, while the State's commits waited (see docs/elasticity.md).
 */
final case class PartitionMove(partitions: Seq[Int], from: String, to: String, millis: Long, reason: String = "lost")
