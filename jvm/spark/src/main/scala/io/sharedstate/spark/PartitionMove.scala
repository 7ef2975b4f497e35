package io.sharedstate.spark

/** Partitions of a durable State rebuilt on executor `to` after executor `from` was lost, in `millis`. */
final case class PartitionMove(partitions: Seq[Int], from: String, to: String, millis: Long)
