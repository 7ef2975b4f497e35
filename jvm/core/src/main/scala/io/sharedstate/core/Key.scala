package io.sharedstate.core

import java.util.Arrays
import scala.util.hashing.MurmurHash3

/**
 * A State key in its binary row form; equality is byte equality. The bytes are never mutated.
 * Serializable so fetches can travel to the executor that owns the key's partition.
 */
final class Key(val bytes: Array[Byte]) extends Serializable {
  private val hash = MurmurHash3.bytesHash(bytes)
  // Kept (it fits in the object's alignment padding) so routing a fetch costs no second hash.
  private val routingHash = MurmurHash3.bytesHash(bytes, 0x5eed)

  override def hashCode(): Int = hash

  override def equals(other: Any): Boolean = other match {
    case k: Key => (k eq this) || (k.hash == hash && Arrays.equals(k.bytes, bytes))
    case _ => false
  }

  /** The partition that owns this key among `partitions`. Stable across JVMs and runs. */
  def partition(partitions: Int): Int = Math.floorMod(routingHash, partitions)

  override def toString: String = s"Key(${bytes.length} bytes)"
}
