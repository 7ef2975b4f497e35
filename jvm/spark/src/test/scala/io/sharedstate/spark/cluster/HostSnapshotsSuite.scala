package io.sharedstate.spark.cluster

import io.sharedstate.core.{Key, State, StateSpec, UpdateBatch}
import io.sharedstate.core.codec.SnapshotCodec
import io.sharedstate.core.row.BinaryRowWriter
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/**
 * A host's deltas without change tracking find the changed keys by their value sets' identity and pair
 * counts: a key whose next version was appended in place to the same array (ValueSet) is changed too.
 * Random rounds of updates on random keys; each delta must hold exactly the keys written since the
 * stored capture, with their whole current pairs (the oracle: the keys each round wrote, and a full
 * capture of the State).
 */
class HostSnapshotsSuite extends AnyFunSuite {
  private def row(v: Long): Array[Byte] = { val w = new BinaryRowWriter(1); w.setLong(0, v); w.toBytes }

  test("a delta holds exactly the keys written since the stored capture, appends in place included") {
    (1 to 5).foreach { seed =>
      val rnd = new Random(seed)
      val state = new State(StateSpec("h", "k BIGINT", "v BIGINT", 1, "replace", compaction = "none"))
      state.registerWriter("w")
      val host = new HostSnapshots(state)
      var epoch = 0L
      var parent = -1L
      (0 until 12).foreach { round =>
        val written = rnd.shuffle((0 until 200).toList).take(rnd.nextInt(60)).toSet
        val b = new UpdateBatch
        written.foreach(k => b.add(row(k.toLong), epoch * 10 + rnd.nextInt(10), row(rnd.nextLong())))
        state.stage("w", epoch, 0, b)
        state.commitEpoch("w", epoch, epoch * 10 + 10)
        epoch += 1
        val token = host.capture(0)
        val encoded = host.encode(0, token, parent)
        val snapshot = SnapshotCodec.decode(encoded.bytes)
        val full = state.partition(0)
        def pairs(k: Key) = { val s = full.get(k); (0 until s.size).map(i => (s.timeAt(i), s.valueAt(i).toSeq)) }
        if (parent >= 0) {
          assert(encoded.delta, s"seed $seed round $round")
          assert(snapshot.entries.map(_._1).toSet == written.map(k => new Key(row(k.toLong))),
            s"seed $seed round $round")
        } else assert(snapshot.entries.size == full.keyCount)
        snapshot.entries.foreach { case (k, set) =>
          assert((0 until set.size).map(i => (set.timeAt(i), set.valueAt(i).toSeq)) == pairs(k), s"seed $seed")
        }
        parent = round.toLong
        host.stored(0, token, parent)
      }
    }
  }
}
