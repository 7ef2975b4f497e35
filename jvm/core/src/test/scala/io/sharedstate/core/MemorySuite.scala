package io.sharedstate.core

import io.sharedstate.core.rules.UpdateRule
import org.scalatest.funsuite.AnyFunSuite

class MemorySuite extends AnyFunSuite {
  private def batch(n: Int, from: Long = 0, valueBytes: Int = 100): UpdateBatch = {
    val b = new UpdateBatch
    (0 until n).foreach(i => b.add(s"key$i".getBytes, from + i, new Array[Byte](valueBytes)))
    b
  }

  test("bytes held are accounted per partition and per State, and shrink with compaction") {
    val s = new State(StateSpec("m", "k STRING", "v BINARY", 4, "replace"))
    s.registerWriter("w"); s.registerReader("r")
    (0 until 5).foreach { e =>
      s.stage("w", e, 0, batch(100, from = e * 1000L))
      s.commitEpoch("w", e, e * 1000L + 999)
    }
    val m = s.metrics
    assert(m.keys == 100 && m.pairs == 500)
    val raw = (0 until 100).map(i => s"key$i".length).sum + 500L * (8 + 100)
    assert(m.rawBytes == raw)
    // The counters equal a scan of what is held: per key its bytes, its objects and its packed array.
    var scanned = 0L
    (0 until 4).foreach(p =>
      s.partition(p).foreachEntry((k, set) => scanned += k.bytes.length + MemoryEstimate.PerKey + set.heldBytes))
    assert(m.bytesHeld == scanned)
    // An array holds its pairs (8 + 4 + value bytes each, after its count and capacity) and some spare
    // room for appends in place: here at most two more pairs per key.
    val exact = raw + 100 * (MemoryEstimate.PerKey + 8) + 500 * 4
    assert(m.bytesHeld >= exact && m.bytesHeld <= exact + 100 * 2 * (8 + 4 + 100), s"${m.bytesHeld} vs $exact")
    assert(m.partitionBytes.size == 4 && m.partitionBytes.sum == m.bytesHeld && m.partitionBytes.forall(_ > 0))
    assert(m.partitionKeys.sum == 100)
    s.reportFetchProgress("r", 3500)
    s.compactionStep(1000)
    val after = s.metrics
    assert(after.pairs == 200 && after.pairsCompacted == 300,
      "keep_latest: one pair below F per key, plus the pairs at or after F")
    assert(after.rawBytes == raw - 300L * 108)
  }

  test("staging past the memory limit fails with a clear error, before anything is changed") {
    val s = new State(StateSpec("lim", "k STRING", "v BINARY", 2, "replace", memoryLimitBytes = 50000))
    s.registerWriter("w")
    s.stage("w", 0, 0, batch(100))
    s.commitEpoch("w", 0, 1000)
    val before = s.metrics
    val e = intercept[SharedStateException](s.stage("w", 1, 0, batch(400, from = 2000)))
    assert(e.getMessage.contains("memoryLimitBytes of 50000") && e.getMessage.contains("State 'lim'"))
    assert(s.metrics.updatesStaged == before.updatesStaged && s.metrics.bytesHeld == before.bytesHeld)
    s.stage("w", 1, 0, batch(10, from = 2000)) // a smaller batch still fits
    assert(intercept[SharedStateException](StateSpec("x", "k STRING", "v STRING", 1, "replace", memoryLimitBytes = -1))
        .getMessage.contains("memoryLimitBytes must be >= 0"))
  }

  test("the rejected log keeps at most rejectedLogCap updates; counts stay exact; its bytes count in memory") {
    // Two writers each send 40 late updates (below U) and 10 rule failures (applied in parallel
    // across partitions), 100 rejections in all, with a cap of 30.
    UpdateRule.register(
      "fails_on_bad_test",
      _ =>
        new UpdateRule {
          val name = "fails_on_bad"
          def apply(p: Array[Byte], in: Array[Byte]): Array[Byte] =
            if (in.length == 3) throw new IllegalStateException("bad") else in
        }
    )
    def run(cap: Int): State = {
      val s = new State(StateSpec(s"rej$cap", "k STRING", "v BINARY", 4, "fails_on_bad_test", rejectedLogCap = cap))
      for (w <- Seq("w1", "w2")) s.registerWriter(w)
      for (w <- Seq("w1", "w2")) s.commitEpoch(w, 0, 1000)
      for ((w, i) <- Seq("w1", "w2").zipWithIndex) {
        val b = new UpdateBatch
        (0 until 40).foreach(j => b.add(s"$w-late$j".getBytes, j.toLong, new Array[Byte](50)))
        (0 until 10).foreach(j => b.add(s"$w-bad$j".getBytes, 2000L + j, new Array[Byte](3)))
        (0 until 5).foreach(j => b.add(s"$w-ok$j".getBytes, 2000L + j, new Array[Byte](8)))
        s.stage(w, 1, i, b)
        s.commitEpoch(w, 1, 5000)
      }
      s
    }
    val unbounded = run(1000)
    val all = unbounded.rejectedUpdates
    assert(all.size == 100 && unbounded.metrics.rejectedDropped == 0)
    val allBytes = all.map(MemoryEstimate.rejected).sum
    assert(unbounded.metrics.rejectedBytes == allBytes && allBytes > 100 * 50)
    val applied = unbounded.metrics.bytesHeld + unbounded.metrics.stagedBytes
    assert(unbounded.memoryUsed == applied + allBytes, "the rejected log counts in memoryUsed")

    val capped = run(30)
    val m = capped.metrics
    assert(capped.rejectedUpdates.size == 30, "the log stops at the cap")
    assert(m.updatesRejected == 100 && m.rejectedDropped == 70, "every rejection is counted")
    // Per writer: (accepted, rejected) at commit; a rule failure is found after its update was accepted.
    assert(m.writerCounts == Map("w1" -> (15L, 40L), "w2" -> (15L, 40L)), "per-writer counts stay exact")
    assert(m.rejectedBytes == capped.rejectedUpdates.map(MemoryEstimate.rejected).sum)
    assert(capped.memoryUsed == m.bytesHeld + m.stagedBytes + m.rejectedBytes)
    assert(
      capped.rejectedUpdates.map(r => (r.writer, new String(r.key))) == all.take(30).map(r =>
        (r.writer, new String(r.key))),
      "the log keeps the first rejections, in order"
    )

    val none = run(0)
    assert(none.rejectedUpdates.isEmpty && none.metrics.rejectedBytes == 0)
    assert(none.metrics.updatesRejected == 100 && none.metrics.rejectedDropped == 100)
    assert(StateSpec("d", "k STRING", "v STRING", 1, "replace").rejectedLogCap == StateSpec.DefaultRejectedLogCap)
    assert(intercept[SharedStateException](StateSpec("x", "k STRING", "v STRING", 1, "replace", rejectedLogCap = -1))
        .getMessage.contains("rejectedLogCap must be >= 0"))
  }

  test("the rejected log counts against the memory limit") {
    val s = new State(StateSpec("rejlim", "k STRING", "v BINARY", 1, "replace", memoryLimitBytes = 20000))
    s.registerWriter("w")
    s.commitEpoch("w", 0, 1000)
    s.stage("w", 1, 0, batch(50, valueBytes = 200)) // all late: 50 rejections of ~330 bytes
    s.commitEpoch("w", 1, 1000)
    assert(s.metrics.bytesHeld == 0 && s.memoryUsed == s.metrics.rejectedBytes && s.memoryUsed > 15000)
    val next = batch(60, from = 2000)
    assert(next.bytes < 20000 && next.bytes + s.memoryUsed > 20000, "it fits only without the rejected log")
    val e = intercept[SharedStateException](s.stage("w", 2, 0, next))
    assert(e.getMessage.contains("memoryLimitBytes of 20000"))
  }
}
