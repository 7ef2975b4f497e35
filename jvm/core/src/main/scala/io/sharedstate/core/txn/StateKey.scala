package io.sharedstate.core.txn

import io.sharedstate.core.Key

/** One key of one State, as a transaction's read or write set names it. Equality: State name and key bytes. */
final case class StateKey(state: String, key: Key) {
  override def toString: String = s"$state:${key.bytes.map("%02x".format(_)).mkString}"
}

object StateKey {

  /** `key` is the key's binary row (Spark's UnsafeRow bytes, as a State stores it). */
  def apply(state: String, key: Array[Byte]): StateKey = StateKey(state, new Key(key))
}
