package io.sharedstate.spark.txn

import io.sharedstate.core.txn.{TransactionDecision, WriteValue}
import org.apache.spark.sql.Row

/**
 * One transaction as a [[RowTransactionLogic]] sees it: the event's columns, the values read (a Row
 * of the State's value columns, null when the key holds nothing or the read was not made: its key was
 * null) and what it decides. With no call it commits and writes nothing; every declared write not
 * written keeps its key as it is.
 *
 * Keys are given as the key column's value for a one-column key (a String for `id STRING`), else a
 * Row of the key columns in order; values as a Row of the value columns in order, or the bare value
 * for a one-column value. A key outside the declared write set aborts the transaction with reason
 * `undeclared_write: ...` naming it and the declared keys.
 */
final class RowTransaction private[sharedstate] (val event: Row, reads: Map[String, Row],
    readStates: Map[String, String], private[sharedstate] val target: RowTransaction.Target) {
  private val writes: Array[WriteValue] = Array.fill(target.declared)(WriteValue.Keep)
  private var abortReason: String = null

  /** The value read as `name` (a read's name in the query), null when absent. */
  def read(name: String): Row = reads.getOrElse(name,
    throw new IllegalArgumentException(
      s"No read named '$name'; the reads are ${reads.keys.toSeq.sorted.mkString(", ")}."))

  /**
   * The State the read `name` reads: a logic that writes the keys it read needs no State names of its
   * own (`txn.write(txn.stateOf("src"), key, value)`), so one class serves States of any name.
   */
  def stateOf(name: String): String = readStates.getOrElse(name,
    throw new IllegalArgumentException(
      s"No read named '$name'; the reads are ${readStates.keys.toSeq.sorted.mkString(", ")}."))

  /** Stores `value` at `key` of `state` at the transaction's time, if it commits. */
  def write(state: String, key: Any, value: Any): Unit = {
    if (value == null) throw new IllegalArgumentException(
      s"A null value for State '$state' key $key; use delete(state, key) to delete a key.")
    writes(target.position(state, key)) = WriteValue.Put(target.value(state, value))
  }

  /** Deletes `key` of `state` at the transaction's time, if it commits (reads after it see null). */
  def delete(state: String, key: Any): Unit = writes(target.position(state, key)) = WriteValue.Delete

  /** Aborts the transaction: none of its writes take effect; `reason` goes to its outcome. */
  def abort(reason: String): Unit = abortReason = Option(reason).getOrElse("aborted")

  private[sharedstate] def decision: TransactionDecision =
    if (abortReason != null) TransactionDecision.Abort(abortReason)
    else TransactionDecision.Commit(writes.toIndexedSeq)
}

private[sharedstate] object RowTransaction {

  /** Where a transaction's writes go: its declared write keys (those made) and the States' value encoders. */
  trait Target {
    def declared: Int

    /** The position of (state, key) among the declared writes made; [[UndeclaredWrite]] when not declared. */
    def position(state: String, key: Any): Int

    /** The value's bytes in `state`'s value layout. */
    def value(state: String, value: Any): Array[Byte]
  }

  /** A write outside the declared write set (the transaction aborts with this message as reason). */
  final class UndeclaredWrite(message: String) extends RuntimeException(message)
}
