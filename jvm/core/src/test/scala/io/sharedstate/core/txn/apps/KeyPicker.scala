package io.sharedstate.core.txn.apps

import scala.util.Random

/**
 * Keys as the TStream benchmarks draw them: Zipf(skew) over `records` keys, the keys split into
 * `partitions` partitions (key mod partitions); a multi-partition transaction (probability `ratio`)
 * spreads its keys over `length` distinct partitions, the others keep all their keys in one.
 */
final class KeyPicker(records: Int, skew: Double, partitions: Int = 8, ratio: Double = 0.25, length: Int = 4) {
  // Cumulative Zipf weights: rank r (0-based) has weight 1 / (r + 1)^skew.
  private val cdf: Array[Double] = {
    val w = Array.tabulate(records)(r => 1.0 / math.pow(r + 1.0, skew))
    val total = w.sum
    var acc = 0.0
    w.map { x => acc += x / total; acc }
  }

  /** A Zipf rank in [0, records). */
  def zipf(rnd: Random): Int = {
    val i = java.util.Arrays.binarySearch(cdf, rnd.nextDouble())
    math.min(records - 1, if (i >= 0) i else -(i + 1))
  }

  /** A Zipf-drawn key moved into `partition`. */
  def inPartition(rnd: Random, partition: Int): Long = {
    val k = (zipf(rnd) / partitions) * partitions + partition
    (if (k >= records) k - partitions else k).toLong
  }

  /** `n` distinct keys, from one partition or (multi-partition) spread over `length` partitions. */
  def keys(rnd: Random, n: Int): IndexedSeq[Long] = {
    val parts =
      if (rnd.nextDouble() < ratio) rnd.shuffle((0 until partitions).toList).take(length).toIndexedSeq
      else IndexedSeq(rnd.nextInt(partitions))
    val out = scala.collection.mutable.LinkedHashSet.empty[Long]
    var i = 0
    while (out.size < n && i < n * 50) { out += inPartition(rnd, parts(i % parts.length)); i += 1 }
    while (out.size < n) out += rnd.nextInt(records).toLong // a tiny partition ran out of distinct keys
    out.toIndexedSeq
  }
}
