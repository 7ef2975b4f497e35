package io.sharedstate.bench.state

import io.sharedstate.core.{FetchAnswer, State => EngineState}
import io.sharedstate.core.fetch.FetchRequest
import java.util.concurrent.TimeUnit
import org.openjdk.jmh.annotations._
import org.openjdk.jmh.infra.Blackhole

/**
 * Read-committed `latest` fetches in chunks of 4096 (a fetch join task's chunk), one thread: the
 * engine's batched fetch (look-ups of a group first, then answers) beside answering one request at a
 * time. Random keys over `bench.keys` keys, so look-ups miss the caches as AdCamp's do at 100K keys/s.
 * Score: fetches per second (4096 per invocation).
 */
@BenchmarkMode(Array(Mode.Throughput))
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = Array("-Xmx12g", "-XX:+UseParallelGC"))
@Threads(1)
@State(Scope.Benchmark)
class FetchBatchBenchmark {
  @Param(Array("batched", "one_at_a_time"))
  var impl: String = _

  private var engine: EngineState = _
  private val chunk = 4096
  private val chunks = 256
  private var requests: Array[Array[FetchRequest]] = _
  private var i = 0

  @Setup(Level.Trial) def setup(): Unit = {
    engine = BenchData.engine(8)
    val r = new scala.util.Random(42)
    requests = Array.fill(chunks)(Array.fill(chunk)(
        FetchRequest(BenchData.keyObjects(r.nextInt(BenchData.keys)), r.nextLong(1000L * BenchData.versions))))
  }

  @Benchmark @OperationsPerInvocation(4096) def fetchChunk(bh: Blackhole): Unit = {
    val rs = requests(i % chunks)
    i += 1
    if (impl == "batched") bh.consume(engine.fetch(rs))
    else {
      val out = new Array[FetchAnswer](rs.length)
      var j = 0
      while (j < rs.length) { out(j) = engine.fetch(rs(j)); j += 1 }
      bh.consume(out)
    }
  }
}
