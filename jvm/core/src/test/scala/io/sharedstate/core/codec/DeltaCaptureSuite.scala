package io.sharedstate.core.codec

import io.sharedstate.core.{Key, SharedStateException, State, StateSpec, UpdateBatch}
import org.scalatest.funsuite.AnyFunSuite
import scala.collection.mutable

/**
 * Change tracking and delta captures in the engine: a delta holds exactly the keys whose entries
 * changed since the previous chain capture (counted by an oracle of the applied updates), keys of a
 * capture that was not stored come back in the next one, and a chain (full, then deltas) restores
 * the live partition.
 */
class DeltaCaptureSuite extends AnyFunSuite {
  private val spec = StateSpec("deltas", "k STRING", "v STRING", 1, "replace")

  private final class Live {
    val state = new State(spec)
    state.trackChanges()
    state.registerWriter("w")
    private var epoch = 0L
    private var waiting = Vector.empty[(Int, Long)]
    val applied = mutable.Set.empty[Int] // keys applied since the oracle was last cleared
    /** Updates keys at times in [u, u+99]; U becomes u (what waited below it applies). */
    def commit(keys: Seq[Int]): Unit = {
      val u = epoch * 100L
      val b = new UpdateBatch
      keys.distinct.foreach(k => b.add(s"k$k".getBytes, u + k % 100, s"v$epoch-$k".getBytes))
      state.stage("w", epoch, 0, b)
      state.commitEpoch("w", epoch, u)
      val (ready, later) = (waiting ++ keys.distinct.map(k => (k, u + k % 100))).partition(_._2 < u)
      ready.foreach(r => applied += r._1)
      waiting = later
      epoch += 1
    }
    def capture(delta: Boolean): PartitionCapture = state.capturePartitionWith(0, delta, startChain = true)(())._1
  }

  private def keysOf(c: PartitionCapture): Set[Int] = c.entries.map(e => new String(e._1.bytes).drop(1).toInt).toSet

  test(
    "a delta capture holds exactly the changed keys; an unstored capture's keys come back; the chain restores the partition") {
    val live = new Live
    val rnd = new scala.util.Random(17)
    (0 until 5).foreach(_ => live.commit(Seq.fill(80)(rnd.nextInt(300))))
    val full = live.capture(delta = false)
    assert(!full.delta && full.entries.length == live.state.metrics.keys)
    live.applied.clear()
    val chain = mutable.ArrayBuffer(SnapshotCodec.decode(SnapshotCodec.encode(full)))
    (0 until 3).foreach { r =>
      live.commit(Seq.fill(8)(rnd.nextInt(300)))
      live.commit(Seq.fill(8)(rnd.nextInt(300)))
      val d = live.capture(delta = true)
      assert(keysOf(d) == live.applied.toSet, s"round $r")
      if (r == 1) live.state.returnChanged(d) // not stored: its keys go into the next delta
      else {
        live.applied.clear()
        chain += SnapshotCodec.decode(SnapshotCodec.encode(d))
      }
    }
    val bytes = SnapshotCodec.encode(live.capture(delta = true))
    assert(bytes(4) == 2 && SnapshotCodec.encode(full)(4) == 1,
      "deltas are format version 2, full snapshots stay version 1")
    assert(chain.tail.forall(_.delta) && !chain.head.delta)

    val restored = new State(spec)
    restored.restorePartitionChain(chain.toSeq)
    assert(restored.metrics.keys == live.state.metrics.keys && restored.metrics.pairs == live.state.metrics.pairs)
    assert(restored.metrics.updatesStaged == live.state.metrics.updatesStaged)
    (0 until 300).foreach { k =>
      val key = new Key(s"k$k".getBytes)
      val (a, b) = (live.state.partition(0).get(key), restored.partition(0).get(key))
      assert((a == null) == (b == null) && (a == null || (0 until a.size).forall(i =>
          a.timeAt(i) == b.timeAt(i) &&
            a.valueAt(i).sameElements(b.valueAt(i)))), s"k$k")
    }
    assert(intercept[SharedStateException](new State(spec).restorePartitionChain(chain.tail.toSeq)).getMessage
        .contains("full snapshot followed by its deltas"))
  }

  test("a delta capture needs change tracking") {
    val s = new State(spec)
    assert(intercept[IllegalStateException](s.capturePartitionWith(0, delta = true, startChain = false)(())).getMessage
        .contains("does not track changes"))
  }
}
