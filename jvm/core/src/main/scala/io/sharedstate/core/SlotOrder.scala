package io.sharedstate.core

/**
 * Orders a round's updates (or new keys) by the [[KeyTable]] slot their key hashes to, so the
 * look-ups and inserts walk the table from its start to its end and its lines are fetched ahead
 * instead of missed one by one. An entry is `(rank << 32) | index`: `rank` is the key's hash rotated
 * so its slot bits (the low bits, see [[KeyTable.slotOf]]) come first, then the rest of the hash, so
 * two entries share a rank only when their keys share the whole hash; `index` keeps arrival order
 * among them. Sorted with an LSD radix sort on the rank (three counting passes, stable), which costs
 * a few passes over the array where a comparison sort of a million entries costs twenty.
 */
private[core] object SlotOrder {

  /** The rank of hash `h` in a table of `capacity` slots (a power of two). */
  def rank(h: Int, capacity: Int): Int = Integer.rotateRight(h, Integer.numberOfTrailingZeros(capacity))

  def entry(h: Int, capacity: Int, index: Int): Long = (rank(h, capacity).toLong << 32) | (index & 0xffffffffL)

  /** The rank an entry was made with. */
  def rankOf(entry: Long): Int = (entry >>> 32).toInt

  /** The hash an entry was made with, in a table of `capacity` slots. */
  def hashOf(entry: Long, capacity: Int): Int =
    Integer.rotateLeft(rankOf(entry), Integer.numberOfTrailingZeros(capacity))

  /** The index an entry was made with. */
  def indexOf(entry: Long): Int = entry.toInt

  private val Small = 64

  /** Sorts `order` by rank (unsigned), entries of one rank staying in their order (ascending index when made so). */
  def sort(order: Array[Long]): Unit = {
    val n = order.length
    if (n < Small) {
      var i = 1
      while (i < n) {
        val e = order(i)
        var j = i - 1
        while (j >= 0 && java.lang.Long.compareUnsigned(order(j), e) > 0) { order(j + 1) = order(j); j -= 1 }
        order(j + 1) = e
        i += 1
      }
    } else {
      var from = order
      var to = new Array[Long](n)
      var shift = 32
      while (shift < 64) {
        val bits = math.min(11, 64 - shift)
        val counts = new Array[Int]((1 << bits) + 1)
        val mask = (1 << bits) - 1
        var i = 0
        while (i < n) { counts(((from(i) >>> shift).toInt & mask) + 1) += 1; i += 1 }
        i = 1
        while (i < counts.length) { counts(i) += counts(i - 1); i += 1 }
        i = 0
        while (i < n) {
          val d = (from(i) >>> shift).toInt & mask
          to(counts(d)) = from(i)
          counts(d) += 1
          i += 1
        }
        val t = from; from = to; to = t
        shift += bits
      }
      if (from ne order) System.arraycopy(from, 0, order, 0, n)
    }
  }
}
