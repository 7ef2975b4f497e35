package io.sharedstate.core.compaction

import io.sharedstate.core._
import org.scalatest.funsuite.AnyFunSuite

class CompactionSuite extends AnyFunSuite {
  private def set(times: Long*): ValueSet = ValueSet.of(null, times.toArray, times.map(t => s"v$t".getBytes).toArray)

  test("keep_latest keeps the newest pair below the horizon and everything at or after it; none keeps all") {
    val s = set(10, 20, 30, 40)
    assert(CompactionRule.KeepLatest.compact(s, 35).size == 2)
    assert(CompactionRule.KeepLatest.compact(s, 35).timeAt(0) == 30)
    assert(CompactionRule.KeepLatest.compact(s, 30).timeAt(0) == 20, "a pair at the horizon is not below it")
    assert(CompactionRule.KeepLatest.compact(s, 15) eq s, "only one pair below: nothing to do")
    assert(CompactionRule.KeepLatest.compact(s, Long.MinValue) eq s)
    assert(new String(CompactionRule.KeepLatest.compact(s, 100).valueAt(0)) == "v40")
    assert(CompactionRule.KeepAll.compact(s, 100) eq s)
    assert(intercept[SharedStateException](CompactionRule.resolve("keep_first", null)).getMessage.contains(
        "keep_latest"))
  }

  private def loaded(keys: Int, compaction: String = "keep_latest", interval: Long = 0): State = {
    val s = new State(StateSpec("c", "k STRING", "v STRING", 2, "replace", compaction = compaction,
        compactionIntervalMs = interval, compactionBatch = 3))
    s.registerWriter("w"); s.registerReader("r")
    (0 until 4).foreach { e =>
      val b = new UpdateBatch
      (0 until keys).foreach(k => b.add(s"k$k".getBytes, e * 100L + k, s"v$e".getBytes))
      s.stage("w", e, 0, b)
      s.commitEpoch("w", e, e * 100L + 99)
    }
    s
  }

  test("lazy compaction: a fetch compacts the entry it reads, and answers the same") {
    val s = loaded(5)
    s.reportFetchProgress("r", 250)
    val key = new Key("k1".getBytes)
    assert(s.partitionOf(key).get(key).size == 4)
    val got = s.fetchLatest(key, 260).asInstanceOf[FetchAnswer.Found]
    assert(got.time == 201 && new String(got.value) == "v2")
    assert(s.partitionOf(key).get(key).size == 2, "1 and 101 are dropped, 201 and 301 kept")
    assert(s.metrics.pairsCompacted == 2)
  }

  test("the periodic sweep examines a bounded number of entries per round and resumes where it stopped") {
    val s = loaded(20)
    s.reportFetchProgress("r", 399)
    val total = s.metrics.pairs
    assert(s.compactionStep(3) == 6, "3 entries in each of 2 partitions")
    assert(s.metrics.pairsCompacted == 6 * 3)
    var rounds = 1
    while (s.metrics.pairsCompacted < 20 * 3 && rounds < 20) { s.compactionStep(3); rounds += 1 }
    assert(s.metrics.pairsCompacted == 60 && s.metrics.pairs == total - 60)
    assert(rounds >= 4, "no round walked everything")
  }

  test("compaction never runs ahead of U, and none compacts nothing") {
    val s = loaded(3)
    s.reportFetchProgress("r", 1000) // F beyond U=399: the horizon is min(F, U)
    assert(s.compactionHorizon == 399)
    s.compactionStep(100)
    assert(s.metrics.pairs == 3, "one pair per key below U")
    val n = loaded(3, compaction = "none")
    n.reportFetchProgress("r", 1000)
    n.compactionStep(100)
    assert(n.metrics.pairs == 12 && n.metrics.pairsCompacted == 0)
  }

  test("the background sweep compacts without any fetch") {
    val s = loaded(10, interval = 5)
    s.reportFetchProgress("r", 399)
    val deadline = System.nanoTime() + 5000000000L
    while (s.metrics.pairs > 10 && System.nanoTime() < deadline) Thread.sleep(5)
    assert(s.metrics.pairs == 10)
    s.close()
  }
}
