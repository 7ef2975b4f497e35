package io.sharedstate.bench.state

import io.sharedstate.core.{Key, State => EngineState}
import java.util.concurrent.TimeUnit
import org.openjdk.jmh.annotations._
import org.openjdk.jmh.infra.Blackhole

/**
 * Read-committed `latest` on 1M keys x 8 versions, one thread: the engine beside a
 * ConcurrentSkipListMap per key and a TreeMap per key under a lock. Keys and times are drawn
 * from a precomputed pseudo-random sequence so every implementation answers the same fetches.
 *
 * `callerKeys`: how the caller holds its key. "scattered" picks it from the 1M key objects made at
 * load time, so the benchmark itself misses twice (the array slot, then the object) before the
 * State is asked; "in_hand" fetches the sequence's own key objects, made in sequence order, so the
 * caller streams through them as a join streams through its rows and only the State's misses count.
 */
@BenchmarkMode(Array(Mode.Throughput))
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = Array("-Xmx12g", "-XX:+UseParallelGC"))
@Threads(1)
@State(Scope.Benchmark)
class FetchLatestBenchmark {
  @Param(Array("engine", "skiplist", "locked_treemap"))
  var impl: String = _

  @Param(Array("scattered", "in_hand"))
  var callerKeys: String = _

  private var engine: EngineState = _
  private var skip: java.util.concurrent.ConcurrentHashMap[Key,
    java.util.concurrent.ConcurrentSkipListMap[java.lang.Long, Array[Byte]]] = _
  private var trees: BenchData.LockedTrees = _
  private val n = 1 << 20
  private val keyIdx = new Array[Int](n)
  private var inHand: Array[Key] = _
  private val times = new Array[Long](n)
  private var i = 0
  // The implementation as a number, chosen once: matching the `impl` string on every call cost every
  // implementation a String.equals per fetch (about a tenth of the samples in a JFR profile).
  private var which = 0

  @Setup(Level.Trial) def setup(): Unit = {
    impl match {
      case "engine" => engine = BenchData.engine(8); which = 0
      case "skiplist" => skip = BenchData.skipLists(); which = 1
      case "locked_treemap" => trees = BenchData.lockedTrees(); which = 2
    }
    val r = new scala.util.Random(42)
    (0 until n).foreach { j =>
      keyIdx(j) = r.nextInt(BenchData.keys); times(j) = r.nextLong(1000L * BenchData.versions)
    }
    inHand = callerKeys match {
      case "scattered" => null
      case "in_hand" => Array.tabulate(n)(j => new Key(BenchData.keyBytes(keyIdx(j)).clone()))
    }
  }

  @Benchmark def fetchLatest(bh: Blackhole): Unit = {
    val j = i & (n - 1)
    i += 1
    val k = if (inHand == null) BenchData.keyObjects(keyIdx(j)) else inHand(j)
    val t = times(j)
    which match {
      case 0 => bh.consume(engine.fetchLatest(k, t))
      case 1 =>
        val m = skip.get(k)
        bh.consume(if (m == null) null else m.floorEntry(t))
      case _ => bh.consume(trees.latest(k, t))
    }
  }
}
