package io.sharedstate.bench.state

import io.sharedstate.core.{FetchAnswer, Key, State => EngineState}
import io.sharedstate.core.fetch.{FetchAnswers, FetchRequest}
import java.util.concurrent.TimeUnit
import org.openjdk.jmh.annotations._
import org.openjdk.jmh.infra.Blackhole

/**
 * Read-committed `latest` fetches in chunks of 4096 (a fetch join task's chunk), one thread, three ways
 * in one run: `into`, the batched fetch into reused answer arrays (`State.fetchInto`, what the fetch
 * join uses: no object per answer, values read in place); `batched`, the batched fetch returning an
 * answer object per request (`State.fetch(requests)`); `one_at_a_time`, `State.fetch(request)` per
 * request. Random keys over `bench.keys` keys, so look-ups miss the caches as AdCamp's do at 100K keys/s.
 * Score: fetches per second (4096 per invocation).
 *
 * `callerKeys`: "scattered" asks with keys picked from the 1M key objects made at load time, so the
 * benchmark itself misses on each request's key object before the State is asked (as the earlier
 * passes measured); "in_hand" with key objects made in request order, as a fetch join makes each key
 * from its event row just before asking, so only the State's own misses count.
 */
@BenchmarkMode(Array(Mode.Throughput))
@OutputTimeUnit(TimeUnit.SECONDS)
@Fork(value = 1, jvmArgsAppend = Array("-Xmx12g", "-XX:+UseParallelGC"))
@Threads(1)
@State(Scope.Benchmark)
class FetchBatchBenchmark {
  @Param(Array("into", "batched", "one_at_a_time"))
  var impl: String = _

  @Param(Array("scattered", "in_hand"))
  var callerKeys: String = _

  private var engine: EngineState = _
  private val chunk = 4096
  private val chunks = 256
  private var requests: Array[Array[FetchRequest]] = _
  private val answers = new FetchAnswers(chunk)
  private var i = 0
  private var which = 0

  @Setup(Level.Trial) def setup(): Unit = {
    engine = BenchData.engine(8)
    val r = new scala.util.Random(42)
    def keyAt(k: Int): Key =
      if (callerKeys == "scattered") BenchData.keyObjects(k) else new Key(BenchData.keyBytes(k).clone())
    requests = Array.fill(chunks)(Array.fill(chunk)(
        FetchRequest(keyAt(r.nextInt(BenchData.keys)), r.nextLong(1000L * BenchData.versions))))
    which = impl match { case "into" => 0; case "batched" => 1; case "one_at_a_time" => 2 }
  }

  @Benchmark @OperationsPerInvocation(4096) def fetchChunk(bh: Blackhole): Unit = {
    val rs = requests(i % chunks)
    i += 1
    which match {
      case 0 =>
        engine.fetchInto(rs, rs.length, answers)
        var found = 0L
        var j = 0
        while (j < rs.length) {
          // The time and a byte of the value, as a join reads both to write its row.
          if (answers.kind(j) == FetchAnswers.Found)
            found += answers.time(j) + answers.valueArray(j)(answers.valueOffset(j) + answers.valueLength(j) - 1)
          j += 1
        }
        bh.consume(found)
      case 1 => bh.consume(engine.fetch(rs))
      case _ =>
        val out = new Array[FetchAnswer](rs.length)
        var j = 0
        while (j < rs.length) { out(j) = engine.fetch(rs(j)); j += 1 }
        bh.consume(out)
    }
  }
}
