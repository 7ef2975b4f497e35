package io.sharedstate.core.txn

import io.sharedstate.core.StateSpec

/** What a workload produces, in the order its source emits it (arrival order, times out of order). */
sealed trait TxnEvent { def time: Long }

object TxnEvent {

  /** A plain update of one State (applied with its update rule). */
  final case class Plain(state: String, key: Array[Byte], time: Long, value: Array[Byte]) extends TxnEvent

  /** A transaction. */
  final case class Txn(txn: Transaction) extends TxnEvent { def time: Long = txn.time }
}

/** A workload: the States it needs (value rows one BIGINT unless it says otherwise) and its events. */
trait TxnWorkload {
  def name: String
  def states: Seq[StateSpec]

  /** The events of one run, from `seed`, in arrival order. */
  def events(seed: Long): IndexedSeq[TxnEvent]
}
