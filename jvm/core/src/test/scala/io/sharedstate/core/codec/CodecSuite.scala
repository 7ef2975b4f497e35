package io.sharedstate.core.codec

import io.sharedstate.core._
import org.scalacheck.Gen
import org.scalatest.funsuite.AnyFunSuite
import org.scalatestplus.scalacheck.ScalaCheckPropertyChecks

class CodecSuite extends AnyFunSuite with ScalaCheckPropertyChecks {
  private val bytesGen = Gen.listOf(Gen.choose(Byte.MinValue, Byte.MaxValue)).map(_.toArray)

  test("changelog records round-trip, for random batches") {
    val gen = for {
      writer <- Gen.alphaNumStr; epoch <- Gen.long; task <- Gen.choose(0, 1000)
      rows <- Gen.listOf(Gen.zip(bytesGen, Gen.long, bytesGen))
    } yield (writer, epoch, task, rows)
    forAll(gen) { case (writer, epoch, task, rows) =>
      val b = new UpdateBatch
      rows.foreach { case (k, t, v) => b.add(k, t, v) }
      val back = ChangelogCodec.decode(ChangelogCodec.encode(ChangelogRecord("s1", writer, epoch, task, b)))
      assert(back.state == "s1" && back.writer == writer && back.epoch == epoch && back.task == task)
      assert(back.batch.size == rows.size && back.batch.maxEventTime == b.maxEventTime)
      rows.indices.foreach { i =>
        assert(back.batch.keyAt(i).sameElements(rows(i)._1) && back.batch.timeAt(i) == rows(i)._2 &&
          back.batch.valueAt(i).sameElements(rows(i)._3))
      }
    }
  }

  test("the changelog format is pinned: magic, version, big-endian fields, CRC-32") {
    val b = new UpdateBatch
    b.add(Array[Byte](7), 1L, Array[Byte](9, 9))
    val bytes = ChangelogCodec.encode(ChangelogRecord("s", "w", 2L, 3, b))
    val body = "5353434c 01 00000001 73 00000001 77 0000000000000002 00000003 00000001 00000001 07 0000000000000001 00000002 0909"
      .replace(" ", "").grouped(2).map(Integer.parseInt(_, 16).toByte).toArray
    assert(bytes.take(body.length).sameElements(body))
    val crc = new java.util.zip.CRC32
    crc.update(body)
    assert(java.nio.ByteBuffer.wrap(bytes, body.length, 4).getInt == crc.getValue.toInt && bytes.length == body.length + 4)
  }

  test("bad input fails clearly: wrong magic, newer version, flipped bit, truncation") {
    val b = new UpdateBatch
    b.add("k".getBytes, 5, "v".getBytes)
    val good = ChangelogCodec.encode(ChangelogRecord("s", "w", 0, 0, b))
    def err(bytes: Array[Byte]) = intercept[SharedStateException](ChangelogCodec.decode(bytes)).getMessage
    assert(err("XXXX".getBytes ++ good.drop(4)).contains("Not a sharedstate changelog record"))
    assert(err(good.updated(4, 2.toByte)).contains("Unsupported changelog record format version 2"))
    assert(err(good.updated(good.length - 6, (good(good.length - 6) ^ 1).toByte)).contains("Corrupt changelog record"))
    assert(err(good.take(good.length - 7)).contains("Truncated"))
    assert(intercept[SharedStateException](SnapshotCodec.decode(good)).getMessage.contains("Not a sharedstate partition snapshot"))
  }

  test("a partition snapshot restores entries and staged updates into a new State, fetch for fetch") {
    def spec = StateSpec("snap", "k STRING", "v STRING", 3, "replace")
    val a = new State(spec)
    a.registerWriter("w")
    val rnd = new scala.util.Random(7)
    (0 until 6).foreach { e =>
      val b = new UpdateBatch
      (0 until 50).foreach(_ => b.add(s"k${rnd.nextInt(20)}".getBytes, e * 100L + rnd.nextInt(150), s"v${rnd.nextInt()}".getBytes))
      a.stage("w", e, 0, b)
      a.commitEpoch("w", e, e * 100L + 50)
    }
    assert(a.metrics.updatesStaged > 0, "some updates still wait for U")
    val b = new State(spec)
    (0 until 3).foreach(i => b.restorePartition(SnapshotCodec.decode(a.snapshotPartition(i))))
    assert(b.metrics.keys == a.metrics.keys && b.metrics.pairs == a.metrics.pairs && b.metrics.rawBytes == a.metrics.rawBytes)
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
