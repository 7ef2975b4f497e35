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

  test("the block-checksummed encoder writes version 1 byte for byte as the spec says, across buffer blocks") {
    val spec = StateSpec("blocks", "k STRING", "v STRING", 1, "replace")
    val state = new State(spec)
    state.registerWriter("w")
    val rnd = new scala.util.Random(11)
    val b = new UpdateBatch
    // many small entries (a few 64 KB blocks) and one value larger than a block (written past the buffer)
    (0 until 5000).foreach(i => b.add(s"k$i".getBytes, 1L + rnd.nextInt(3), s"v${rnd.nextInt()}".getBytes))
    b.add("big".getBytes, 2L, Array.fill(200000)(rnd.nextInt().toByte))
    b.add("later".getBytes, 500L, "staged".getBytes) // waits for U
    state.stage("w", 0, 0, b)
    state.commitEpoch("w", 0, 100)
    val encoded = state.snapshotPartition(0)

    // The oracle: the format written field by field through DataOutputStream, CRC-32 of it all.
    val entries = scala.collection.mutable.ArrayBuffer.empty[(Key, ValueSet)]
    state.partition(0).foreachEntry((k, v) => entries += (k -> v))
    val staged = scala.collection.mutable.ArrayBuffer.empty[(Key, Long, Array[Byte])]
    state.partition(0).foreachStaged((k, t, v) => staged += ((k, t, v)))
    assert(staged.nonEmpty)
    val body = new java.io.ByteArrayOutputStream()
    val d = new java.io.DataOutputStream(body)
    def bytes(x: Array[Byte]): Unit = { d.writeInt(x.length); d.write(x) }
    d.write("SSSN".getBytes); d.writeByte(1); bytes("blocks".getBytes); d.writeInt(0); d.writeInt(1); d.writeLong(100L)
    d.writeInt(entries.size)
    entries.foreach { case (k, set) =>
      bytes(k.bytes); d.writeInt(set.size)
      (0 until set.size).foreach(i => d.writeLong(set.timeAt(i)))
      (0 until set.size).foreach(i => bytes(set.valueAt(i)))
    }
    d.writeInt(staged.size)
    staged.foreach { case (k, t, v) => bytes(k.bytes); d.writeLong(t); bytes(v) }
    d.flush()
    val crc = new java.util.zip.CRC32
    crc.update(body.toByteArray)
    d.writeInt(crc.getValue.toInt)
    assert(encoded.length > 3 * 65536)
    assert(java.util.Arrays.equals(encoded, body.toByteArray))
    // the array reader and the stream reader agree
    val fromArray = SnapshotCodec.decode(encoded)
    val fromStream = SnapshotCodec.read(new java.io.ByteArrayInputStream(encoded))
    assert(fromArray.entries.size == entries.size && fromArray.staged.size == staged.size)
    assert(fromArray.entries.map(_._1) == fromStream.entries.map(_._1))
  }

  test("encoded in blocks of any size, the blocks end to end are the encoding; a delta too") {
    val state = new State(StateSpec("blocks", "k STRING", "v STRING", 1, "replace"))
    state.registerWriter("w")
    state.trackChanges()
    val rnd = new scala.util.Random(5)
    val b = new UpdateBatch
    (0 until 300).foreach(i => b.add(s"k$i".getBytes, 1L + rnd.nextInt(4), Array.fill(rnd.nextInt(40))('x'.toByte)))
    b.add("later".getBytes, 500L, "staged".getBytes)
    state.stage("w", 0, 0, b)
    state.commitEpoch("w", 0, 100)
    val full = state.capturePartitionWith(0, delta = false, startChain = true)(())._1
    val change = new UpdateBatch
    (0 until 300 by 7).foreach(i => change.add(s"k$i".getBytes, 150L, "changed".getBytes))
    state.stage("w", 1, 0, change)
    state.commitEpoch("w", 1, 200) // U past the changes (an update at or before U is late)
    val delta = state.capturePartitionWith(0, delta = true, startChain = true)(())._1
    assert(delta.delta && delta.entries.length == 43)
    Seq(full, delta).foreach { c =>
      val whole = SnapshotCodec.encode(c)
      // 16..41: ints, longs and the CRC trailer straddle block ends at every offset
      (16 to 41).foreach { max =>
        val blocks = SnapshotCodec.encodeBlocks(c, max)
        assert(blocks.forall(_.length <= max) && blocks.init.forall(_.length > 0))
        assert(java.util.Arrays.equals(blocks.flatten, whole), s"blocks of at most $max bytes")
      }
      val decoded = SnapshotCodec.decode(whole)
      assert(decoded.delta == c.delta && decoded.entries.map(_._1) == c.entries.map(_._1).toSeq)
    }
  }
}
