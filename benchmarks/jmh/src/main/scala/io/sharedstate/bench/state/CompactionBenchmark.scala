package io.sharedstate.bench.state

import io.sharedstate.core.{Key, State => EngineState}
import java.util.concurrent.TimeUnit
import org.openjdk.jmh.annotations._

/**
 * keep_latest compaction of 1M keys x 8 versions with the horizon between the 6th and 7th
 * version, so 5 pairs per key go: the engine's sweep over every entry (in bounded rounds) beside
 * headMap(...).clear() on each key's ConcurrentSkipListMap or TreeMap (under the lock). Each
 * invocation compacts a freshly loaded store; throughput is in keys compacted per second.
 */
@BenchmarkMode(Array(Mode.Throughput))
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = Array("-Xmx12g", "-XX:+UseParallelGC"))
@Warmup(iterations = 1)
@Measurement(iterations = 3)
@State(Scope.Benchmark)
class CompactionBenchmark {
  @Param(Array("engine", "skiplist", "locked_treemap"))
  var impl: String = _

  private val horizon = 1000L * (BenchData.versions - 2) - 1 // below version 6's time of key 999
  private var engine: EngineState = _
  private var skip: java.util.concurrent.ConcurrentHashMap[Key,
    java.util.concurrent.ConcurrentSkipListMap[java.lang.Long, Array[Byte]]] = _
  private var trees: BenchData.LockedTrees = _

  @Setup(Level.Invocation) def load(): Unit = impl match {
    case "engine" =>
      engine = BenchData.engine(1)
      engine.registerReader("r")
      engine.reportFetchProgress("r", horizon)
    case "skiplist" => skip = BenchData.skipLists()
    case _ => trees = BenchData.lockedTrees()
  }

  @Benchmark
  @OperationsPerInvocation(1000000)
  def compactAll(): Long = impl match {
    case "engine" =>
      var examined = 0L
      while (examined < BenchData.keys) examined += engine.compactionStep(10000)
      engine.metrics.pairsCompacted
    case "skiplist" =>
      var n = 0L
      skip.forEach { (_, m) =>
        val keep = m.floorKey(horizon - 1)
        if (keep != null) { val head = m.headMap(keep); n += head.size; head.clear() }
      }
      n
    case _ =>
      var n = 0L
      trees.lock.lock()
      try trees.map.forEach { (_, m) =>
          val keep = m.floorKey(horizon - 1)
          if (keep != null) { val head = m.headMap(keep); n += head.size; head.clear() }
        }
      finally trees.lock.unlock()
      n
  }
}
