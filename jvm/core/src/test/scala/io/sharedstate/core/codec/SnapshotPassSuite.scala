package io.sharedstate.core.codec

import io.sharedstate.core.{EventTime, Key, State, StateSpec, UpdateBatch}
import java.util.concurrent.ConcurrentLinkedQueue
import java.util.concurrent.atomic.AtomicBoolean
import org.scalatest.funsuite.AnyFunSuite
import scala.collection.mutable.ArrayBuffer
import scala.util.Random

/**
 * Snapshot passes (an encoding over the live partition, exact at the boundary it ends at). The oracle
 * of each pass is the partition captured under the commit lock at that same boundary (the pass's
 * `mark`, evaluated there): the pass, restored (a full one, or a chain of a full one and deltas),
 * must give exactly the captured partition while a committer applies out-of-order updates with late
 * ones. With compaction on, a reader moves F and a sweeper compacts the whole time: compactions are
 * not commits (they run beside them, so no boundary orders them), and two takings at one boundary
 * may each hold a key before or after a compaction of it; both then agree once compacted at the
 * horizon reached since (compacting keep_latest at h1, then at h2 >= h1, is compacting at h2).
 */
class SnapshotPassSuite extends AnyFunSuite {
  private def spec(partitions: Int, compaction: String = "keep_latest") =
    StateSpec("pass", "k STRING", "v STRING", partitions, "replace", compaction = compaction)

  private def load(state: State, epoch: Long, keys: Seq[Int], rnd: Random, u: Long): Unit = {
    val b = new UpdateBatch
    // U moves from u - 100 to u: times below u - 100 are late, those at or above u wait for the next U
    keys.foreach(k => b.add(s"k$k".getBytes, u - 130 + rnd.nextInt(200), s"v$epoch-$k-${rnd.nextInt(1000)}".getBytes))
    state.stage("w", epoch, 0, b)
    state.commitEpoch("w", epoch, u)
  }

  test("a pass over a quiet partition is the locked capture's encoding byte for byte: full, delta, untracked") {
    val rnd = new Random(3)
    val tracked = new State(spec(1))
    tracked.trackChanges()
    tracked.registerWriter("w")
    (0 until 4).foreach(e => load(tracked, e, Seq.fill(500)(rnd.nextInt(2000)), rnd, 100L * (e + 1)))
    def same(pass: EncodedSnapshot, c: PartitionCapture): Unit = {
      assert(pass.delta == c.delta && pass.entries == c.entries.length)
      assert(java.util.Arrays.equals(pass.blocks.flatten, SnapshotCodec.encode(c)))
    }
    // The reference capture is taken inside the mark (the same boundary). A delta's keys come in the
    // tracking set's order: its reference takes them back from the pass (another set, maybe another
    // order), so it is compared entry by entry.
    val (full, c0) =
      SnapshotPass.encode(tracked, 0, delta = false, startChain = true, maxBlock = 100)(
        PartitionCapture.of("pass", tracked.partition(0), 1, tracked.updateProgress, delta = false))
    same(full, c0)
    assert(full.blocks.drop(1).forall(_.length <= 100), "the entries go in blocks of at most maxBlock")
    load(tracked, 4, Seq.fill(40)(rnd.nextInt(2000)), rnd, 500)
    val (delta, _) = SnapshotPass.encode(tracked, 0, delta = true, startChain = true)(())
    SnapshotPass.returnChanged(tracked, delta)
    val c1 = tracked.capturePartitionWith(0, delta = true, startChain = true)(())._1
    def entries(bytes: Array[Byte]) = SnapshotCodec.decode(bytes).entries.map { case (k, set) =>
      new String(k.bytes) -> (0 until set.size).map(i => (set.timeAt(i), new String(set.valueAt(i))))
    }.toMap
    assert(delta.delta && delta.entries == c1.entries.length && c1.entries.length > 0)
    assert(entries(delta.blocks.flatten) == entries(SnapshotCodec.encode(c1)))

    val untracked = new State(spec(1))
    untracked.registerWriter("w")
    load(untracked, 0, Seq.fill(300)(rnd.nextInt(1000)), rnd, 100)
    val (pass, c2) = SnapshotPass.encode(untracked, 0, delta = false, startChain = false)(
      PartitionCapture.of("pass", untracked.partition(0), 1, untracked.updateProgress, delta = false))
    same(pass, c2)
    assert(!untracked.partition(0).tracksChanges, "a pass's own tracking ends with it")
    assert(intercept[IllegalStateException](
        SnapshotPass.encode(untracked, 0, delta = true, startChain = true)(())).getMessage.contains("does not track"))
  }

  test("a pass writes each key from its set when the set keeps it, else from the key object: as the capture does") {
    val rnd = new Random(5)
    val state = new State(
      StateSpec("pass", "k STRING", "v STRING", 1, "replace",
        compaction = "class:" + classOf[KeylessCompaction].getName))
    state.registerWriter("w")
    state.registerReader("r")
    (0 until 4).foreach(e => load(state, e, Seq.fill(400)(rnd.nextInt(600)), rnd, 100L * (e + 1)))
    state.reportFetchProgress("r", 350)
    state.compactionStep(100000) // one whole sweep
    val kept = ArrayBuffer.empty[Int]
    state.partition(0).foreachEntry((_, set) => kept += set.keptKeyLength)
    assert(kept.count(_ < 0) > 50 && kept.count(_ >= 0) > 50, "sets with and without their key")
    val (pass, c) = SnapshotPass.encode(state, 0, delta = false, startChain = false, maxBlock = 64)(
      PartitionCapture.of("pass", state.partition(0), 1, state.updateProgress, delta = false))
    assert(pass.entries == c.entries.length)
    assert(java.util.Arrays.equals(pass.blocks.flatten, SnapshotCodec.encode(c)))
  }

  test("passes taken while commits, F and compaction go on restore exactly the partition at their boundary") {
    Seq(11L, 12L, 13L).foreach(seed => stress(seed, tracked = true, compacting = true))
    Seq(14L, 15L).foreach(seed => stress(seed, tracked = true, compacting = false))
    Seq(21L, 22L).foreach(seed => stress(seed, tracked = false, compacting = true))
    stress(23L, tracked = false, compacting = false)
  }

  // `tracked`: chains (a full pass, then deltas, one of them not stored); else every pass is full on
  // a partition that tracks nothing between passes.
  private def stress(seed: Long, tracked: Boolean, compacting: Boolean): Unit = {
    val partitions = 2
    val keys = 10000
    val compaction = if (compacting) "keep_latest" else "none"
    val state = new State(spec(partitions, compaction))
    if (tracked) state.trackChanges()
    state.registerWriter("w")
    state.registerReader("r")
    val stop = new AtomicBoolean(false)
    val errors = new ConcurrentLinkedQueue[Throwable]()
    def thread(body: => Unit): Thread = {
      val t = new Thread(() =>
        try body
        catch { case e: Throwable => errors.add(e) })
      t.start(); t
    }
    val committed = new java.util.concurrent.atomic.AtomicLong()
    val committer = thread {
      val rnd = new Random(seed)
      var e = 0L
      while (!stop.get) {
        // times around U: some late (rejected), some ahead of it (staged), updates out of order
        load(state, e, Seq.fill(500 + rnd.nextInt(2000))(rnd.nextInt(keys)), rnd, 100L * (e + 1))
        e += 1
        committed.set(e)
      }
    }
    // Each pass waits after its walk for a commit to land, so every pass has keys that changed during it
    // (two counts: the one seen first may be of a commit that ended just before the pass began).
    val commitLands: () => Unit = () => {
      val seen = committed.get
      val until = System.nanoTime() + 300000000000L // generous: an idle-priority build on a loaded machine
      while (committed.get < seen + 2 && System.nanoTime() < until && errors.isEmpty) Thread.sleep(1)
      assert(committed.get >= seen + 2 || !errors.isEmpty, "no commit within 5 minutes")
      ()
    }
    val reader = thread {
      var f = 0L
      while (!stop.get && compacting) {
        val u = state.updateProgress
        if (EventTime.isFinite(u) && u - 150 > f) { f = u - 150; state.reportFetchProgress("r", f) }
        Thread.onSpinWait()
      }
    }
    val sweeper = thread(while (!stop.get && compacting) state.compactionStep(64))
    try {
      val rnd = new Random(seed * 7)
      Thread.sleep(50) // some entries first
      val chains = Array.fill(partitions)(ArrayBuffer.empty[PartitionSnapshot])
      var unchangedPasses = 0 // passes without a key changed during them
      (0 until 10).foreach { round =>
        val p = round % partitions
        val delta = tracked && chains(p).nonEmpty && rnd.nextInt(4) != 0
        val (pass, reference) = SnapshotPass.encodeWith(state, p, delta, tracked, 4096, commitLands)(
          PartitionCapture.of("pass", state.partition(p), partitions, state.updateProgress, delta = false))
        val decoded = SnapshotCodec.decode(pass.blocks.flatten)
        if (pass.changedDuring == 0) unchangedPasses += 1
        assert(decoded.delta == delta && decoded.updateProgress == reference.updateProgress)
        if (delta && rnd.nextInt(3) == 0) SnapshotPass.returnChanged(state, pass) // not stored
        else {
          if (!delta) chains(p).clear()
          chains(p) += decoded
          assertSame(chains(p).toSeq, reference, compaction, state.compactionHorizon,
            s"seed $seed round $round partition $p")
        }
        Thread.sleep(rnd.nextInt(20))
      }
      assert(unchangedPasses == 0, s"seed $seed: a pass had no key changed during it")
    } finally {
      stop.set(true)
      Seq(committer, reader, sweeper).foreach(_.join())
    }
    assert(errors.isEmpty, errors.toString)
    assert(state.metrics.updatesRejected > 0 && state.metrics.updatesStaged > 0, "late and waiting updates occurred")
  }

  // The chain restored gives the captured partition: the same keys with the same pairs (compacted
  // at `horizon` first when compacting), the same staged updates.
  private def assertSame(chain: Seq[PartitionSnapshot], reference: PartitionCapture, compaction: String,
      horizon: Long, clue: String): Unit = {
    val n = reference.partitionCount
    val fromChain = new State(spec(n, compaction))
    fromChain.restorePartitionChain(chain)
    val expected = new State(spec(n, compaction))
    expected.restorePartition(SnapshotCodec.decode(SnapshotCodec.encode(reference)))
    val (a, b) = (fromChain.partition(reference.partition), expected.partition(reference.partition))
    def compacted(set: io.sharedstate.core.ValueSet) =
      if (compaction == "none") set else io.sharedstate.core.compaction.CompactionRule.KeepLatest.compact(set, horizon)
    assert(a.keyCount == b.keyCount, clue)
    if (compaction == "none") assert(a.pairCount == b.pairCount, clue)
    b.foreachEntry { (k, stored) =>
      val want = compacted(stored)
      val held = a.get(k)
      assert(held != null, s"$clue: ${new String(k.bytes)} missing")
      val got = compacted(held)
      assert(got.size == want.size, s"$clue: ${new String(k.bytes)}")
      (0 until want.size).foreach(i =>
        assert(got.timeAt(i) == want.timeAt(i) && got.valueAt(i).sameElements(want.valueAt(i)), clue))
    }
    def staged(s: io.sharedstate.core.StatePartition) = {
      val out = ArrayBuffer.empty[(String, Long, String)]
      s.foreachStaged((k, t, v) => out += ((new String(k.bytes), t, new String(v))))
      out.toSeq
    }
    assert(staged(a) == staged(b), clue)
    assert(a.get(new Key("absent".getBytes)) == null)
  }
}

/** keep_latest, then every set whose newest time is odd rebuilt without its key (as a user rule may build it). */
class KeylessCompaction extends io.sharedstate.core.compaction.CompactionRule {
  val name = "keyless"
  def compact(set: io.sharedstate.core.ValueSet, horizon: Long): io.sharedstate.core.ValueSet = {
    val kept = io.sharedstate.core.compaction.CompactionRule.KeepLatest.compact(set, horizon)
    if (kept.isEmpty || kept.lastTime % 2 == 0) kept
    else io.sharedstate.core.ValueSet.of(null, Array.tabulate(kept.size)(kept.timeAt),
      Array.tabulate(kept.size)(kept.valueAt))
  }
}
