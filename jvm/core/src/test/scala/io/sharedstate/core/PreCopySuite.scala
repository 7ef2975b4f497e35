package io.sharedstate.core

import java.nio.charset.StandardCharsets.UTF_8
import org.scalatest.funsuite.AnyFunSuite
import scala.util.Random

/**
 * The pre-copy of a live move (State.preCopy, preload, handOver with `precopied`): the new owner ends
 * with exactly what a whole-partition hand-over gives it, and with what a State that never moved holds,
 * although keys changed, keys appeared and updates were staged between the pre-copy and the fence; the
 * fence's snapshots hold only that delta (after a further round, what changed since that round); a
 * take-back at the old owner restores it exactly. The partitions' keys count at one holder only: the
 * new owner's pre-copy not before the take-over, the old owner's kept entries not after the hand-over.
 */
class PreCopySuite extends AnyFunSuite {
  private val spec = StateSpec("pc", "k STRING", "v STRING", 4, "replace")
  private val moving = Seq(0, 2)

  private def fresh(): State = { val s = new State(spec); s.registerWriter("w"); s }

  // Epoch e: `updates` updates over `keys` keys, timestamps around e * 1000 (some late), the same for every State.
  private def stage(states: Seq[State], e: Long, keys: Int, updates: Int = 400): Long = {
    val random = new Random(e * 31 + keys)
    val batches = states.map(_ => new UpdateBatch)
    var maxTime = 0L
    for (_ <- 0 until updates) {
      val t = e * 1000 + random.nextInt(1400) - 300
      val (k, v) = (s"key-${random.nextInt(keys)}".getBytes(UTF_8), s"e$e-t$t".getBytes(UTF_8))
      batches.foreach(_.add(k, t, v))
      maxTime = math.max(maxTime, t)
    }
    states.zip(batches).foreach { case (s, b) => s.stage("w", e, 0, b) }
    maxTime - 300
  }

  private def epoch(states: Seq[State], e: Long, keys: Int, updates: Int = 400): Unit = {
    val progress = stage(states, e, keys, updates)
    states.foreach(_.commitEpoch("w", e, progress))
  }

  private def entries(s: State, i: Int): Seq[(String, Seq[Long], Seq[String])] =
    codec.SnapshotCodec.decode(s.snapshotPartition(i)).entries.map { case (k, set) =>
      (new String(k.bytes, UTF_8), (0 until set.size).map(set.timeAt),
        (0 until set.size).map(j =>
          new String(set.valueAt(j), UTF_8)))
    }.sortBy(_._1)

  private def staged(s: State, i: Int): Seq[(String, Long)] =
    codec.SnapshotCodec.decode(s.snapshotPartition(i)).staged.map { case (k, t, _) =>
      (new String(k.bytes, UTF_8), t)
    }.sortBy(identity)

  test("a pre-copied move gives the new owner what a whole-partition move gives it, from a smaller fence") {
    val (pre, plain, never) = (fresh(), fresh(), fresh())
    val all = Seq(pre, plain, never)
    (0L until 3L).foreach(epoch(all, _, keys = 3000, updates = 3000))
    val copy = pre.preCopy(moving)
    val target = new State(spec)
    assert(target.preload(copy.toSeq) == moving)
    // not the target's to count before the take-over: the State's keys are counted once
    assert(target.metrics.keys == 0 && target.metrics.partitionKeys.forall(_ == 0) && target.metrics.bytesHeld == 0)
    assert(pre.metrics.keys == never.metrics.keys)
    intercept[SharedStateException](pre.preCopy(moving)) // one pre-copy at a time
    // between the pre-copy and the fence: changed and new keys, and an epoch staged but not committed
    epoch(all, 3L, keys = 3100, updates = 200)
    // a second round: the keys changed since the first (the fence then sends what changed after it)
    val again = pre.preCopyAgain(moving)
    assert(again.map(_.length).sum < copy.map(_.length).sum / 2)
    target.preload(again.toSeq)
    epoch(all, 4L, keys = 3100, updates = 200)
    val pendingProgress = stage(all, 5L, keys = 3100, updates = 200)

    val delta = pre.handOver(moving, precopied = true)
    val whole = plain.handOver(moving)
    assert(delta.snapshots.map(_.length).sum < whole.snapshots.map(_.length).sum / 2, "the fence sends the delta")
    // the old owner keeps the entries until it releases them, but no longer counts them
    assert(pre.metrics.keys == never.metrics.keys - moving.map(never.partition(_).keyCount).sum)
    target.restoreProgress(pre.progressImage); target.takeOver(delta)
    assert(target.metrics.keys == moving.map(never.partition(_).keyCount).sum)
    assert(target.metrics.partitionKeys == never.metrics.partitionKeys.zipWithIndex.map { case (k, i) =>
      if (moving.contains(i)) k else 0L
    })
    val other = new State(spec)
    other.restoreProgress(plain.progressImage); other.takeOver(whole)
    for (i <- moving) {
      assert(entries(target, i) == entries(other, i) && entries(target, i) == entries(never, i), s"partition $i")
      assert(staged(target, i) == staged(other, i) && staged(target, i).nonEmpty)
      assert(pre.partition(i).stagedCount == 0 && !pre.partition(i).tracksChanges)
    }
    // the old owner kept the entries (a take-back would need them) until it releases them
    assert(pre.partition(0).keyCount == never.partition(0).keyCount)
    pre.release(moving)
    assert(moving.forall(pre.partition(_).keyCount == 0))
    // the staged epoch commits on the new owner as on the State that never moved
    target.commitEpoch("w", 5L, pendingProgress); never.commitEpoch("w", 5L, pendingProgress)
    for (i <- moving) assert(entries(target, i) == entries(never, i))
  }

  test("a pre-copied partition taken back by its old owner (the new one failed) is as it was") {
    val (pre, never) = (fresh(), fresh())
    (0L until 2L).foreach(epoch(Seq(pre, never), _, keys = 100))
    pre.preCopy(moving)
    epoch(Seq(pre, never), 2L, keys = 150)
    val pending = stage(Seq(pre, never), 3L, keys = 150)
    pre.takeOver(pre.handOver(moving, precopied = true))
    assert(pre.metrics.keys == never.metrics.keys, "taken back: counted again")
    pre.commitEpoch("w", 3L, pending); never.commitEpoch("w", 3L, pending)
    for (i <- 0 until 4) assert(entries(pre, i) == entries(never, i), s"partition $i")
  }

  test("a cancelled pre-copy stops tracking; a preload that does not fit is refused") {
    val s = fresh()
    epoch(Seq(s), 0L, keys = 50)
    val copy = s.preCopy(Seq(1))
    s.cancelPreCopy(Seq(1))
    assert(!s.partition(1).tracksChanges)
    intercept[SharedStateException](s.handOver(Seq(1), precopied = true))
    intercept[SharedStateException](s.preload(copy.toSeq)) // partition 1 holds entries here
  }
}
