package io.sharedstate.bench.changes

import io.sharedstate.core.{ChangeSubscription, State => EngineState, StateSpec, UpdateBatch}
import java.util.concurrent.TimeUnit
import org.openjdk.jmh.annotations._

/**
 * The change stream's cost per U step on a State of 100k keys (8 partitions) where each step makes
 * `changes` pairs final: one commit (apply) plus reading the step's changes, either by scanning every
 * partition for [old U, new U) (the scan path: what cluster mode and the pre-feed local mode do) or
 * from a change subscription (the ESG change feed). Average time per step.
 */
@BenchmarkMode(Array(Mode.AverageTime))
@OutputTimeUnit(TimeUnit.MICROSECONDS)
@Fork(value = 1, jvmArgsAppend = Array("-Xmx2g"))
@Warmup(iterations = 2, time = 2)
@Measurement(iterations = 3, time = 2)
@State(Scope.Benchmark)
class ChangeStepBenchmark {
  @Param(Array("scan", "feed"))
  var read: String = _
  @Param(Array("10", "1000"))
  var changes: Int = _

  private val keys = 100000
  private var state: EngineState = _
  private var sub: ChangeSubscription = _
  private var epoch = 0L
  private var u = 0L
  private val rnd = new java.util.Random(1)
  private def key(i: Int) = f"key$i%08d".getBytes("UTF-8")

  @Setup(Level.Trial) def load(): Unit = {
    state = new EngineState(StateSpec("changes", "k STRING", "v STRING", 8, "replace"))
    state.registerWriter("w")
    val b = new UpdateBatch
    for (i <- 0 until keys) b.add(key(i), 0L, "v0".getBytes("UTF-8"))
    state.stage("w", epoch, 0, b)
    state.commitEpoch("w", epoch, 1L)
    u = 1L
    if (read == "feed") sub = state.subscribeChanges(u)
  }

  @TearDown(Level.Trial) def close(): Unit = if (sub != null) sub.close()

  @Benchmark
  def step(): Int = {
    epoch += 1
    val b = new UpdateBatch
    var i = 0
    while (i < changes) { b.add(key(rnd.nextInt(keys)), u + i, "v".getBytes("UTF-8")); i += 1 }
    state.stage("w", epoch, 0, b)
    val from = u
    u += changes + 1
    state.commitEpoch("w", epoch, u)
    if (read == "feed") { val c = sub.changes(from, u); sub.commit(u); c.length }
    else state.mergedChanges(from, u).length
  }
}
