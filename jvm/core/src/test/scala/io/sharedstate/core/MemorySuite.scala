package io.sharedstate.core

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
    assert(m.bytesHeld == raw + 100 * MemoryEstimate.PerKey + 500 * MemoryEstimate.PerVersion)
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
}
