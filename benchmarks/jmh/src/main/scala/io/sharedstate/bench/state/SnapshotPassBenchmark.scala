package io.sharedstate.bench.state

import io.sharedstate.core.codec.SnapshotPass
import io.sharedstate.core.{State => EngineState}
import java.util.concurrent.TimeUnit
import org.openjdk.jmh.annotations._

/**
 * One full snapshot pass over one partition of `bench.keys` keys (one version each by default, the
 * durability benchmark's shape: at 10M keys over 4 partitions a partition holds 2.5M), one thread:
 * the walk of the key table and the encoding into blocks, which is half of a 10M round's CPU (the
 * other half is Parquet's zstd). The partition is large enough that its value sets are cold, as a
 * real round finds them. Run with `-jvmArgsAppend -Dbench.keys=2500000 -jvmArgsAppend -Dbench.versions=1`
 * (the command in benchmarks/results/durability/snapshot-pass/README.md).
 */
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@Fork(value = 1, jvmArgsAppend = Array("-Xmx12g", "-XX:+UseG1GC"))
@Warmup(iterations = 3)
@Measurement(iterations = 5)
@Threads(1)
@State(Scope.Benchmark)
class SnapshotPassBenchmark {
  private var engine: EngineState = _

  @Setup(Level.Trial) def setup(): Unit = {
    engine = BenchData.engine(1)
    System.gc() // the load's garbage gone, as in a round some time after the load
  }

  @Benchmark def fullPass(): Long = {
    val (e, _) = SnapshotPass.encode(engine, 0, delta = false, startChain = false)(())
    e.blocks.length.toLong + e.entries
  }
}
