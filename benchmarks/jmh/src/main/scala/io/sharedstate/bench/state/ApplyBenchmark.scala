package io.sharedstate.bench.state

import java.util.concurrent.TimeUnit
import org.openjdk.jmh.annotations._

/**
 * Applying 1M keys x 8 versions of updates, from an empty store: the engine stages each epoch
 * (one UpdateBatch of 1M updates, out of time order within the key range) and commits it, which
 * applies the per-key chains below the new U; the baselines put each update. One core: a single
 * partition and a common pool of parallelism 1, so the engine's chains run on one worker.
 * Values are made once beforehand, so encoding is not measured. Throughput is in updates per second
 * (OperationsPerInvocation).
 */
@BenchmarkMode(Array(Mode.Throughput))
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1,
  jvmArgsAppend = Array("-Xmx12g", "-XX:+UseParallelGC", "-Djava.util.concurrent.ForkJoinPool.common.parallelism=1"))
@Warmup(iterations = 1)
@Measurement(iterations = 3)
@State(Scope.Benchmark)
class ApplyBenchmark {
  @Param(Array("engine", "skiplist", "locked_treemap"))
  var impl: String = _

  @Setup(Level.Trial) def premake(): Unit = require(BenchData.values.length == BenchData.versions)

  @Benchmark
  @OperationsPerInvocation(8000000)
  def apply(): AnyRef = impl match {
    case "engine" => BenchData.engine(1, premade = true)
    case "skiplist" => BenchData.skipLists(premade = true)
    case _ => BenchData.lockedTrees(premade = true)
  }
}
