package io.sharedstate.bench.state

import java.lang.management.ManagementFactory

/**
 * Heap held by 1M keys x 8 versions in the engine and in both baselines, against the raw bytes
 * (keys, 8-byte timestamps, values) and the engine's own estimate. Run one implementation per JVM:
 *   bin/sbt "bench/runMain io.sharedstate.bench.state.StateFootprint engine"
 */
object StateFootprint {
  private def usedAfterGc(): Long = {
    val mem = ManagementFactory.getMemoryMXBean
    (0 until 5).foreach { _ => System.gc(); Thread.sleep(200) }
    mem.getHeapMemoryUsage.getUsed
  }

  def main(args: Array[String]): Unit = {
    val impl = args.headOption.getOrElse("engine")
    require(BenchData.keyObjects.length == BenchData.keys) // built before: shared key arrays belong to no structure
    val before = usedAfterGc()
    val held: AnyRef = impl match {
      case "engine" => BenchData.engine(8)
      case "skiplist" => BenchData.skipLists()
      case "locked_treemap" => BenchData.lockedTrees()
    }
    val after = usedAfterGc()
    val used = after - before
    val raw = BenchData.rawBytes
    val estimate = held match { case s: io.sharedstate.core.State => s.metrics.bytesHeld; case _ => -1L }
    println(f"""{"impl": "$impl", "keys": ${BenchData.keys}, "versions": ${BenchData.versions}, "raw_bytes": $raw, """ +
      f""""heap_bytes": $used, "ratio": ${used.toDouble / raw}%.3f, "engine_estimate_bytes": $estimate}""")
    if (held.hashCode == 42) println("") // keep `held` reachable until after the measurement
  }
}
