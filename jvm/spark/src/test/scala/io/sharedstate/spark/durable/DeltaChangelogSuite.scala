package io.sharedstate.spark.durable

import io.sharedstate.core.{Key, RejectedUpdate, UpdateBatch}
import java.nio.file.Files
import org.apache.hadoop.conf.Configuration
import org.scalatest.funsuite.AnyFunSuite

class DeltaChangelogSuite extends AnyFunSuite {

  private def bytes(s: String): Array[Byte] = s.getBytes("UTF-8")
  private def tempTable(): String = Files.createTempDirectory("changelog-").resolve("changelog").toString

  private def batch(rows: (String, Long, String)*): UpdateBatch = {
    val b = new UpdateBatch
    rows.foreach { case (k, t, v) => b.add(bytes(k), t, bytes(v)) }
    b
  }

  // The rows a task wrote, as (partition, key, time, value, task, seq), independent of the reader.
  private def expected(b: UpdateBatch, task: Int, partitions: Int): Set[(Int, String, Long, String, Int, Int)] =
    (0 until b.size).map { i =>
      (new Key(b.keyAt(i)).partition(partitions), new String(b.keyAt(i), "UTF-8"), b.timeAt(i),
        new String(b.valueAt(i), "UTF-8"), task, i)
    }.toSet

  private def seen(rows: Seq[ChangelogRow]): Set[(Int, String, Long, String, Int, Int)] =
    rows.map(r =>
      (r.partition, new String(r.key, "UTF-8"), r.timestamp.longValue, new String(r.value, "UTF-8"), r.task, r.seq)).toSet

  test("task files committed as an epoch read back per partition, each row in its key's partition") {
    val log = DeltaChangelog.openOrCreate(tempTable(), new Configuration())
    val target = log.target(partitionCount = 4)
    val b0 = batch(("a", 10L, "x"), ("b", 11L, "y"), ("c", 12L, "z"), ("a", 13L, "w"))
    val b1 = batch(("d", 5L, "v"), ("e", 7L, "u"))
    val files = target.writeTask("w1", 0L, 0, b0) ++ target.writeTask("w1", 0L, 1, b1)
    assert(log.readPartition(0).isEmpty, "nothing is visible before the commit")
    assert(log.commitEpoch("w1", 0L, files).isDefined)
    val all = (0 until 4).flatMap(p => log.readPartition(p))
    assert(seen(all) == expected(b0, 0, 4) ++ expected(b1, 1, 4))
    all.foreach(r => assert(r.writer == "w1" && r.epoch == 0L && r.event == null))
    assert(log.lastEpoch("w1").contains(0L))
    assert(log.lastEpoch("w2").isEmpty)
  }

  test("a trim removes exactly the files whose every row is a covered epoch, with its record, in one log-only commit") {
    val log = DeltaChangelog.openOrCreate(tempTable(), new Configuration())
    val target = log.target(partitionCount = 2)
    val rnd = new scala.util.Random(3)
    def rows(p: Int, writerEpochs: Seq[(String, Long)]) = writerEpochs.zipWithIndex.map { case ((w, e), i) =>
      ChangelogRow(p, w, e, 0, i, bytes(s"k${rnd.nextInt(1000)}"), java.lang.Long.valueOf(i.toLong), bytes("v"))
    }.toIndexedSeq
    // Partition 0: a's epochs 1 and 2, b's 1, a file mixing a's epochs 2 and 3, and two mixing writers a
    // and c (all covered / not); partition 1: a's 1.
    val files = Seq(
      0 -> Seq("a" -> 1L, "a" -> 1L),
      0 -> Seq("a" -> 2L),
      0 -> Seq("a" -> 1L, "c" -> 1L),
      0 -> Seq("b" -> 1L, "b" -> 1L, "b" -> 1L),
      0 -> Seq("a" -> 2L, "a" -> 3L),
      0 -> Seq("a" -> 1L, "c" -> 2L),
      1 -> Seq("a" -> 1L)
    ).flatMap { case (p, we) => target.write(p, rows(p, we)) }
    log.commitFiles(files)
    val before = log.latestVersion
    // Partition 0 covered through a's epoch 2 and c's 1 (b not at all); partition 1 not part of the trim.
    val epochs = Map("a" -> 2L, "c" -> 1L)
    // The footers decide the one-writer files; the two-writer ones need their rows read.
    val conf = new Configuration()
    assert(files.map(f => ChangelogFooters.allCovered(f.path, conf, epochs)) ==
      Seq(Some(true), Some(true), None, Some(false), Some(false), None, Some(true)))
    val covered = log.coveredFiles(Map(0 -> epochs))
    assert(covered.count == 3 && covered.bytes == files.take(3).map(_.size).sum, covered)
    val version = log.markTrimmed(Map(0 -> 7L), covered)
    assert(version == before + 1)
    assert(log.filesAddedAfter(before, version).contains(Map.empty), "the trim adds no file")
    assert(log.trimmedThrough() == Map(0 -> 7L))
    val left = log.readPartition(0).map(r => (r.writer, r.epoch)).groupBy(identity).view.mapValues(_.size).toMap
    assert(left == Map(("b", 1L) -> 3, ("a", 2L) -> 1, ("a", 3L) -> 1, ("a", 1L) -> 1, ("c", 2L) -> 1),
      "the files with an uncovered row stay whole")
    assert(log.readPartition(1).map(r => (r.writer, r.epoch)) == Seq(("a", 1L)))
    // The table before the trim still reads every row (time travel until VACUUM).
    assert(log.readPartition(0, Some(before)).size == 12)
  }

  test("an epoch committed again (a re-run after a failure) adds nothing") {
    val log = DeltaChangelog.openOrCreate(tempTable(), new Configuration())
    val target = log.target(partitionCount = 2)
    val b = batch(("k1", 1L, "v1"), ("k2", 2L, "v2"))
    assert(log.commitEpoch("w", 3L, target.writeTask("w", 3L, 0, b)).isDefined)
    val version = log.latestVersion
    // The re-run writes new files (another attempt) and commits the same (writer, epoch) again.
    assert(log.commitEpoch("w", 3L, target.writeTask("w", 3L, 0, b)).isEmpty)
    assert(log.commitEpoch("w", 2L, target.writeTask("w", 2L, 0, b)).isEmpty, "an older epoch is also refused")
    assert(log.latestVersion == version)
    assert(seen((0 until 2).flatMap(p => log.readPartition(p))) == expected(b, 0, 2))
    // Another writer's epoch 3 is its own transaction id.
    assert(log.commitEpoch("other", 3L, target.writeTask("other", 3L, 0, b)).isDefined)
  }

  test(
    "rows rejected in the task are logged too: a null key in the journal partition, a null time in its key's partition") {
    val log = DeltaChangelog.openOrCreate(tempTable(), new Configuration())
    val target = log.target(partitionCount = 3)
    val b = batch(("k", 1L, "v"))
    b.reject(RejectedUpdate(null, 5L, bytes("no key"), RejectedUpdate.NullKey, "w", 0L, 0L))
    b.reject(RejectedUpdate(bytes("k"), null, bytes("no time"), RejectedUpdate.NullTime, "w", 0L, 0L))
    log.commitEpoch("w", 0L, target.writeTask("w", 0L, 0, b))
    val journal = log.readPartition(ChangelogSchema.JournalPartition)
    assert(journal.map(r => (r.key, r.timestamp.longValue, new String(r.value, "UTF-8"))).map(t =>
      (t._1 == null, t._2, t._3)) ==
      Seq((true, 5L, "no key")))
    val p = new Key(bytes("k")).partition(3)
    val rows = log.readPartition(p).sortBy(_.seq)
    assert(rows.map(r => (new String(r.value, "UTF-8"), Option(r.timestamp).map(_.longValue))) ==
      Seq(("v", Some(1L)), ("no time", None)))
  }

  test("commits call for Delta checkpoints (every 10 versions), written in the background; the table reads back") {
    val path = tempTable()
    val log = DeltaChangelog.openOrCreate(path, new Configuration())
    val target = log.target(partitionCount = 2)
    val written = (0 until 25).map { e =>
      val b = batch((s"k$e", e.toLong, s"v$e"))
      assert(log.commitEpoch("w", e.toLong, target.writeTask("w", e.toLong, 0, b)).isDefined)
      expected(b, 0, 2)
    }
    DeltaCheckpoints.awaitQueued()
    val logDir = new java.io.File(path, "_delta_log")
    val checkpoints = logDir.list().filter(_.endsWith(".checkpoint.parquet")).map(_.takeWhile(_ != '.').toLong).toSet
    assert(checkpoints.nonEmpty && checkpoints.forall(v => v % 10 == 0 && v <= log.latestVersion), checkpoints)
    assert(checkpoints.contains(log.latestVersion / 10 * 10), s"the newest due checkpoint ($checkpoints)")
    // A new reader starts from the newest checkpoint; it sees every epoch, and the writer's last one.
    val reopened = DeltaChangelog.openOrCreate(path, new Configuration())
    assert(seen((0 until 2).flatMap(p => reopened.readPartition(p))) == written.reduce(_ ++ _))
    assert(reopened.lastEpoch("w").contains(24L))
  }

  test("an older version reads as it was (time travel on the changelog)") {
    val log = DeltaChangelog.openOrCreate(tempTable(), new Configuration())
    val target = log.target(partitionCount = 1)
    log.commitEpoch("w", 0L, target.writeTask("w", 0L, 0, batch(("a", 1L, "first"))))
    val v0 = log.latestVersion
    log.commitEpoch("w", 1L, target.writeTask("w", 1L, 0, batch(("a", 2L, "second"))))
    assert(log.readPartition(0, Some(v0)).map(r => new String(r.value, "UTF-8")) == Seq("first"))
    assert(log.readPartition(0).map(r => new String(r.value, "UTF-8")).toSet == Set("first", "second"))
  }

  test("files go under the Delta partition directories of the table") {
    val path = tempTable()
    val target = DeltaChangelog.openOrCreate(path, new Configuration()).target(partitionCount = 2)
    assert(target.directory(-1).endsWith("partition=-1"))
    assert(target.directory(1).endsWith("partition=1"))
    assert(target.directory(0).contains(new java.io.File(path).getName))
  }
}
