package io.sharedstate.core.codec

import io.sharedstate.core.{Key, SharedStateException, State, StateSpec, UpdateBatch}
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/**
 * Loading a chain straight into a State (recovery's path) gives what restoring its decoded links
 * does (the reference, State.restorePartitionChain), pair for pair and staged update for staged
 * update, for chains whose links repeat keys; bad chains and corrupt links fail before anything of
 * them is loaded.
 */
class SnapshotRestoreSuite extends AnyFunSuite {
  private val spec = StateSpec("restore", "k STRING", "v STRING", 3, "replace")

  private def commit(s: State, e: Long, rnd: Random, n: Int): Unit = {
    val b = new UpdateBatch
    (0 until n).foreach(_ =>
      b.add(s"k${rnd.nextInt(2000)}".getBytes, e * 100 - 30 + rnd.nextInt(130), s"v$e-${rnd.nextInt()}".getBytes))
    s.stage("w", e, 0, b)
    s.commitEpoch("w", e, e * 100)
  }

  private def contents(s: State, p: Int): (Seq[(String, Seq[(Long, String)])], Seq[(String, Long, String)]) = {
    val entries = scala.collection.mutable.ArrayBuffer.empty[(String, Seq[(Long, String)])]
    s.partition(p).foreachEntry((k, set) =>
      entries += (new String(k.bytes) -> (0 until set.size).map(i => (set.timeAt(i), new String(set.valueAt(i))))))
    val staged = scala.collection.mutable.ArrayBuffer.empty[(String, Long, String)]
    s.partition(p).foreachStaged((k, t, v) => staged += ((new String(k.bytes), t, new String(v))))
    (entries.sortBy(_._1).toSeq, staged.toSeq)
  }

  test("a chain loaded as it is decoded is the chain restored from its decoded links") {
    val rnd = new Random(7)
    val live = new State(spec)
    live.trackChanges()
    live.registerWriter("w")
    (1 to 3).foreach(e => commit(live, e, rnd, 1500))
    val chains = Array.fill(3)(Seq.empty[Array[Byte]])
    (0 until 3).foreach { round =>
      (0 until 3).foreach { p =>
        val (e, _) = SnapshotPass.encode(live, p, delta = round > 0, startChain = true)(())
        chains(p) :+= e.blocks.flatten
      }
      if (round < 2) commit(live, 4 + round, rnd, 400)
    }
    // a link holding a key twice (a key changed during a pass is written again at its end)
    val dup = live.capturePartitionWith(1, delta = false, startChain = false)(())._1
    val twice = new PartitionCapture(dup.state, 1, 3, dup.updateProgress, delta = false,
      dup.entries ++ dup.entries.take(50).map { case (k, _) => k -> live.partition(1).get(k) }, dup.staged, null)
    chains(1) = Seq(SnapshotCodec.encode(twice))
    val loaded = new State(spec)
    val reference = new State(spec)
    (0 until 3).foreach { p =>
      SnapshotRestore.loadChain(loaded, chains(p))
      reference.restorePartitionChain(chains(p).map(SnapshotCodec.decode))
      val same = contents(loaded, p) == contents(reference, p)
      assert(same, s"partition $p")
      assert(loaded.partition(p).keyCount == reference.partition(p).keyCount)
      assert(loaded.partition(p).pairCount == reference.partition(p).pairCount)
      assert(loaded.partition(p).bytesHeld == reference.partition(p).bytesHeld)
    }
    val asLive = contents(loaded, 0) == contents(live, 0) && contents(loaded, 2) == contents(live, 2)
    assert(asLive, "the chains of partitions 0 and 2 load the live partitions")
    assert(loaded.partition(0).get(new Key("absent".getBytes)) == null)
  }

  test("a chain that is not a full snapshot then its deltas, or a corrupt link, fails before it is loaded") {
    val rnd = new Random(9)
    val live = new State(spec)
    live.trackChanges()
    live.registerWriter("w")
    commit(live, 1, rnd, 600)
    commit(live, 2, rnd, 600)
    val full0 = SnapshotPass.encode(live, 0, delta = false, startChain = true)(())._1.blocks.flatten
    val full1 = SnapshotPass.encode(live, 1, delta = false, startChain = true)(())._1.blocks.flatten
    commit(live, 3, rnd, 600)
    val delta0 = SnapshotPass.encode(live, 0, delta = true, startChain = true)(())._1.blocks.flatten
    def fails(chain: Seq[Array[Byte]], says: String): Unit = {
      val s = new State(spec)
      val e = intercept[SharedStateException](SnapshotRestore.loadChain(s, chain))
      assert(e.getMessage.contains(says), e.getMessage)
      assert(s.partition(0).keyCount == 0 && s.partition(0).stagedCount == 0, "nothing of the first link loaded")
    }
    fails(Seq(delta0), "full snapshot followed by its deltas")
    val corrupt = full0.clone()
    corrupt(corrupt.length / 2) = (corrupt(corrupt.length / 2) ^ 1).toByte
    fails(Seq(corrupt), "CRC-32")
    fails(Seq(full0.take(full0.length - 7)), "CRC-32")
    fails(Seq("nope".getBytes ++ new Array[Byte](20)), "Not a sharedstate")
    val other = new State(spec.copy(partitions = 2))
    assert(intercept[SharedStateException](SnapshotRestore.loadChain(other, Seq(full0))).getMessage.contains(
        "does not fit"))
    val mixed = new State(spec)
    assert(intercept[SharedStateException](SnapshotRestore.loadChain(mixed, Seq(full0, full1))).getMessage.contains(
        "full snapshot followed by its deltas"))
  }
}
