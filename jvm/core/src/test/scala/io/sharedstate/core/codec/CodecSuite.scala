package io.sharedstate.core.codec

import io.sharedstate.core._
import org.scalatest.funsuite.AnyFunSuite

class CodecSuite extends AnyFunSuite {
  test("bad input fails clearly: wrong magic, newer version, flipped bit, truncation") {
    val spec = StateSpec("s", "k STRING", "v STRING", 1, "replace")
    val state = new State(spec)
    state.registerWriter("w")
    val b = new UpdateBatch
    b.add("k".getBytes, 5, "v".getBytes)
    state.stage("w", 0, 0, b)
    state.commitEpoch("w", 0, 10)
    val good = state.snapshotPartition(0)
    def err(bytes: Array[Byte]) = intercept[SharedStateException](SnapshotCodec.decode(bytes)).getMessage
    assert(err("XXXX".getBytes ++ good.drop(4)).contains("Not a sharedstate partition snapshot"))
    assert(err(good.updated(4, 9.toByte)).contains("version 9"))
    assert(err(good.updated(good.length - 1, (good(good.length - 1) ^ 1).toByte)).contains("Corrupt"),
      "a flipped CRC bit")
    assert(err(good.take(good.length - 7)).contains("Truncated"))
  }

  test("a partition snapshot restores entries and staged updates into a new State, fetch for fetch") {
    def spec = StateSpec("snap", "k STRING", "v STRING", 3, "replace")
    val a = new State(spec)
    a.registerWriter("w")
    val rnd = new scala.util.Random(7)
    (0 until 6).foreach { e =>
      val b = new UpdateBatch
      (0 until 50).foreach(_ =>
        b.add(s"k${rnd.nextInt(20)}".getBytes, e * 100L + rnd.nextInt(150), s"v${rnd.nextInt()}".getBytes))
      a.stage("w", e, 0, b)
      a.commitEpoch("w", e, e * 100L + 50)
    }
    assert(a.metrics.updatesStaged > 0, "some updates still wait for U")
    val b = new State(spec)
    (0 until 3).foreach(i => b.restorePartition(SnapshotCodec.decode(a.snapshotPartition(i))))
    assert(
      b.metrics.keys == a.metrics.keys && b.metrics.pairs == a.metrics.pairs && b.metrics.rawBytes == a.metrics.rawBytes)
    assert(b.metrics.updatesStaged == a.metrics.updatesStaged)
    Seq(a, b).foreach { s => s.registerWriter("w2"); s.reportUpdateProgress("w2", 10000); s.finishWriter("w") }
    for (k <- 0 until 20; t <- 0L to 800L by 37) {
      val key = new Key(s"k$k".getBytes)
      (a.fetchLatest(key, t), b.fetchLatest(key, t)) match {
        case (FetchAnswer.Found(t1, v1), FetchAnswer.Found(t2, v2)) => assert(t1 == t2 && v1.sameElements(v2))
        case (x, y) => assert(x == y, s"k$k at $t")
      }
    }
    val wrong = new State(StateSpec("snap", "k STRING", "v STRING", 2, "replace"))
    assert(intercept[SharedStateException](wrong.restorePartition(SnapshotCodec.decode(a.snapshotPartition(0))))
        .getMessage.contains("does not fit"))
  }
}
