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
  // The length and first 16 bytes, inline: a map lookup compares keys of up to 16 bytes (a BIGINT key
  // row is 16) without reading their arrays, one cache miss less per lookup of a large State.
  private[core] val length = bytes.length
  private[core] val head0 = Key.word(bytes, 0)
  private[core] val head1 = Key.word(bytes, 8)

  override def hashCode(): Int = hash

  override def equals(other: Any): Boolean = other match {
    case k: Key => (k eq this) || (k.hash == hash && k.length == length && k.head0 == head0 && k.head1 == head1 &&
        (length <= Key.Inline || Arrays.equals(k.bytes, bytes)))
    case _ => false
  }

  /** The partition that owns this key among `partitions`. Stable across JVMs and runs. */
  def partition(partitions: Int): Int =
    // For a power of two the mask is floorMod's answer without its division (a few % of a fetch).
    if ((partitions & (partitions - 1)) == 0) routingHash & (partitions - 1)
    else Math.floorMod(routingHash, partitions)

  override def toString: String = s"Key(${bytes.length} bytes)"
}

object Key {
  private val Inline = 16

  // Bytes [from, from + 8) of `bytes` as a long, zeros past its end.
  private def word(bytes: Array[Byte], from: Int): Long = {
    var w = 0L
    var i = math.min(bytes.length, from + 8) - 1
    while (i >= from) { w = (w << 8) | (bytes(i) & 0xffL); i -= 1 }
    w
  }
}
