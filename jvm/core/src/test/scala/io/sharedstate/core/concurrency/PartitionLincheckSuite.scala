package io.sharedstate.core.concurrency

import io.sharedstate.core._
import io.sharedstate.core.fetch.FetchRequest
import org.jetbrains.lincheck.datastructures.{Operation, StressOptions}
import org.scalatest.funsuite.AnyFunSuite

/**
 * Lincheck's view of one single-partition State under concurrent fetches (single and batched), update
 * staging and commit (U advance, apply), fetch progress (F advance) and compaction (sweep and lazy).
 * Lincheck runs the operations in parallel on real threads, then checks every outcome against some
 * sequential order of the same operations on a fresh instance (linearizability). Lincheck's model checker is not used:
 * on this class it reports a livelock inside ConcurrentHashMap traversal and ReentrantLock
 * acquisition that real threads never show (see docs/engine.md); the oracle stress suite covers
 * the interleavings it would have explored. Commits come from one writer and F from one
 * reader, as in a real query (nonParallelGroup); fetches and sweeps run alongside both.
 */
class LincheckedState {
  private val state = new State(StateSpec("lin", "k STRING", "v STRING", 1, "replace"))
  private var epoch = 0L
  private var readerAt = 0L
  state.registerWriter("w")
  state.registerReader("r")

  private def show(a: FetchAnswer): String = a match {
    case FetchAnswer.Found(t, v) => s"$t:${new String(v)}"
    case other => other.toString
  }
  private def fetch(key: String, t: Long): String =
    try show(state.fetchLatest(new Key(key.getBytes), t))
    catch { case e: SharedStateException => "below F" }

  /** Stages two out-of-order updates per key for the next epoch, then commits it with progress 10 * epoch + 10. */
  @Operation(nonParallelGroup = "writer")
  def commit(): Long = {
    val b = new UpdateBatch
    val base = epoch * 10
    b.add("a".getBytes, base + 7, s"a$epoch".getBytes)
    b.add("a".getBytes, base + 3, s"a'$epoch".getBytes)
    b.add("b".getBytes, base + 5, s"b$epoch".getBytes)
    state.stage("w", epoch, 0, b)
    val out = state.commitEpoch("w", epoch, base + 10)
    epoch += 1
    out.updateProgress
  }

  @Operation(nonParallelGroup = "reader")
  def advanceF(): Long = {
    readerAt += 6
    state.reportFetchProgress("r", readerAt)
    state.fetchProgress
  }

  @Operation def fetchA15(): String = fetch("a", 15)
  @Operation def fetchB16(): String = fetch("b", 16)

  /** Both fetches in one batched call: its answers must fit one point of the sequential order too. */
  @Operation def fetchBoth(): String =
    try
      state.fetch(Array(FetchRequest(new Key("a".getBytes), 15), FetchRequest(new Key("b".getBytes), 16))).map(show).mkString(
        " ")
    catch { case _: SharedStateException => "below F" }
  @Operation def sweep(): Int = { state.compactionStep(2); 0 }
}

class PartitionLincheckSuite extends AnyFunSuite {
  private val long = sys.props.contains("sharedstate.stress") || sys.env.contains("SHAREDSTATE_STRESS")

  test("fetches, staging, commit (U advance and apply), F advance and compaction are linearizable (Lincheck stress)") {
    new StressOptions()
      .iterations(if (long) 300 else 10)
      .invocationsPerIteration(if (long) 10000 else 300)
      .threads(3)
      .actorsPerThread(3)
      .check(classOf[LincheckedState])
  }
}
