package io.sharedstate.bench.state

import io.sharedstate.core._
import io.sharedstate.core.row.BinaryRowWriter
import java.util.concurrent.ConcurrentSkipListMap
import java.util.concurrent.locks.ReentrantLock

/**
 * The data every State benchmark uses: `keys` keys (a BIGINT key row, 16 bytes) with `versions`
 * versions each (a BIGINT value row, 16 bytes) at times 1000 * v + (key % 1000), so versions of one
 * key are 1000 apart and U = 1000 * versions makes all of them final. Sizes come from system
 * properties so a quick run can shrink them.
 */
object BenchData {
  val keys: Int = Integer.getInteger("bench.keys", 1000000)
  val versions: Int = Integer.getInteger("bench.versions", 8)

  def row(v: Long): Array[Byte] = { val w = new BinaryRowWriter(1); w.setLong(0, v); w.toBytes }
  val keyBytes: Array[Array[Byte]] = Array.tabulate(keys)(k => row(k.toLong * 7919))
  val keyObjects: Array[Key] = keyBytes.map(new Key(_))
  def time(k: Int, v: Int): Long = 1000L * v + (k % 1000)
  def value(k: Int, v: Int): Array[Byte] = row(k.toLong * 31 + v)

  /** The values made once, so the apply benchmark measures applying rather than encoding. */
  lazy val values: Array[Array[Array[Byte]]] = Array.tabulate(versions, keys)((v, k) => value(k, v))
  private def valueOf(premade: Boolean, k: Int, v: Int) = if (premade) values(v)(k) else value(k, v)

  /** Raw bytes of the data set: keys, 8-byte timestamps and values. */
  def rawBytes: Long = keys.toLong * (16 + versions * (8 + 16))

  def spec(partitions: Int): StateSpec = StateSpec("bench", "k BIGINT", "v BIGINT", partitions, "replace")

  /** The engine loaded epoch by epoch, one version of every key per epoch. */
  def engine(partitions: Int, premade: Boolean = false): State = {
    val s = new State(spec(partitions))
    s.registerWriter("w")
    (0 until versions).foreach { v =>
      val b = new UpdateBatch
      var k = 0
      while (k < keys) { b.add(keyBytes(k), time(k, v), valueOf(premade, k, v)); k += 1 }
      s.stage("w", v, 0, b)
      s.commitEpoch("w", v, 1000L * (v + 1))
    }
    s
  }

  /** Baseline 1: a ConcurrentSkipListMap per key in a ConcurrentHashMap. */
  def skipLists(premade: Boolean = false)
      : java.util.concurrent.ConcurrentHashMap[Key, ConcurrentSkipListMap[java.lang.Long, Array[Byte]]] = {
    val m =
      new java.util.concurrent.ConcurrentHashMap[Key, ConcurrentSkipListMap[java.lang.Long, Array[Byte]]](keys * 2)
    (0 until versions).foreach { v =>
      var k = 0
      while (k < keys) {
        m.computeIfAbsent(new Key(keyBytes(k)), _ => new ConcurrentSkipListMap[java.lang.Long, Array[Byte]]()).put(
          time(k, v), valueOf(premade, k, v))
        k += 1
      }
    }
    m
  }

  /** Baseline 2: a TreeMap per key in a HashMap, all under one lock. */
  final class LockedTrees {
    val lock = new ReentrantLock()
    val map = new java.util.HashMap[Key, java.util.TreeMap[java.lang.Long, Array[Byte]]](keys * 2)
    def put(k: Key, t: Long, v: Array[Byte]): Unit = {
      lock.lock()
      try {
        var tree = map.get(k)
        if (tree == null) { tree = new java.util.TreeMap(); map.put(k, tree) }
        tree.put(t, v)
      } finally lock.unlock()
    }
    def latest(k: Key, t: Long): java.util.Map.Entry[java.lang.Long, Array[Byte]] = {
      lock.lock()
      try { val tree = map.get(k); if (tree == null) null else tree.floorEntry(t) }
      finally lock.unlock()
    }
  }

  def lockedTrees(premade: Boolean = false): LockedTrees = {
    val m = new LockedTrees
    (0 until versions).foreach { v =>
      var k = 0
      while (k < keys) { m.put(new Key(keyBytes(k)), time(k, v), valueOf(premade, k, v)); k += 1 }
    }
    m
  }
}
