package io.sharedstate.spark.durable

import java.nio.file.Files
import org.apache.hadoop.conf.Configuration
import org.apache.hadoop.fs.Path
import org.apache.parquet.hadoop.ParquetFileReader
import org.apache.parquet.hadoop.metadata.CompressionCodecName
import org.apache.parquet.hadoop.util.HadoopInputFile
import org.scalatest.funsuite.AnyFunSuite
import scala.jdk.CollectionConverters._

/**
 * The durable tables' files as Parquet's own writer writes them: a snapshot and a changelog task's rows
 * read back as written, the codec is the configured one and its zstd level takes effect (with Kernel's
 * writer every level gave the same file: Kernel does not hand Parquet the level).
 */
class ColumnsParquetWriterSuite extends AnyFunSuite {

  // A snapshot-like blob: fixed-width fields with some repetition, so zstd's levels compress it differently.
  private val blob: Array[Byte] = {
    val b = java.nio.ByteBuffer.allocate(24 * 200000)
    val r = new scala.util.Random(7)
    (0 until 200000).foreach { i =>
      b.putInt(16).putLong(i.toLong * 7919 % 1000003).putLong(1795851689451000L + r.nextInt(60000000)).putInt(i % 17)
    }
    b.array()
  }

  private def table(settings: (String, String)*): (SnapshotTable, Path) = {
    val dir = new Path(Files.createTempDirectory("snapshot-parquet").toUri.toString, "snapshots")
    val conf = new Configuration()
    settings.foreach { case (k, v) => conf.set(k, v) }
    (SnapshotTable.openOrCreate(dir.toString, conf, chunkBytes = 1 << 20), dir)
  }

  private def files(dir: Path, partition: Int): Seq[Path] = {
    val fs = dir.getFileSystem(new Configuration())
    fs.listStatus(new Path(dir, s"partition=$partition")).toSeq.map(_.getPath).filter(_.getName.endsWith(".parquet"))
  }

  private def codecs(file: Path): Set[CompressionCodecName] = {
    val reader = ParquetFileReader.open(HadoopInputFile.fromPath(file, new Configuration()))
    try reader.getFooter.getBlocks.asScala.flatMap(_.getColumns.asScala.map(_.getCodec)).toSet
    finally reader.close()
  }

  private def bytesOnDisk(dir: Path, partition: Int): Long = {
    val fs = dir.getFileSystem(new Configuration())
    files(dir, partition).map(fs.getFileStatus(_).getLen).sum
  }

  test("a snapshot written at zstd levels -5 and 19 reads back byte for byte; level 19's file is smaller") {
    val written = Seq("-5", "19").map { level =>
      val (t, dir) = table(KernelTables.ZstdLevelKey -> level)
      t.write(partition = 1, id = 42L, updateProgress = 1000L, changelogVersion = 3L, bytes = blob)
      val back = t.latest(1).get
      assert(back.bytes.sameElements(blob), s"level $level: the snapshot read back differs")
      assert((back.id, back.updateProgress, back.changelogVersion, back.isDelta) == ((42L, 1000L, Some(3L), false)))
      assert(files(dir, 1).size == 1)
      assert(codecs(files(dir, 1).head) == Set(CompressionCodecName.ZSTD))
      level -> bytesOnDisk(dir, 1)
    }.toMap
    assert(written("19") < written("-5") * 0.95, s"file sizes by zstd level: $written")
  }

  test("changelog files at zstd levels -5 and 19 read back row for row (strings, nulls), level 19's smaller") {
    val rnd = new scala.util.Random(11)
    val batch = new io.sharedstate.core.UpdateBatch
    (0 until 20000).foreach(i =>
      batch.add(s"key-${rnd.nextInt(5000)}".getBytes, 1795851689451000L + i, s"value-${i % 97}".getBytes))
    val read = Seq("-5", "19").map { level =>
      val conf = new Configuration()
      conf.set(KernelTables.ZstdLevelKey, level)
      val log = DeltaChangelog.openOrCreate(
        new Path(Files.createTempDirectory("changelog-parquet").toUri.toString, "changelog").toString, conf)
      val written = log.target(partitionCount = 2).writeTask("writer-\u00e9", 7L, 3, batch)
      assert(log.commitEpoch("writer-\u00e9", 7L, written).isDefined)
      assert(written.forall(f => codecs(new Path(f.path)) == Set(CompressionCodecName.ZSTD)))
      val rows = (0 until 2).flatMap(p => log.readPartition(p)).sortBy(_.seq)
      level -> (rows, written.map(_.size).sum)
    }.toMap
    val rows = read("-5")._1
    assert(rows.size == batch.size)
    rows.zipWithIndex.foreach { case (r, i) =>
      assert(r.writer == "writer-\u00e9" && r.epoch == 7L && r.task == 3 && r.event == null && r.commitSeq == null)
      assert(new String(r.key) == new String(batch.keyAt(r.seq)) && r.timestamp.longValue == batch.timeAt(r.seq))
    }
    assert(read("19")._1.map(r => (r.partition, r.seq, new String(r.value))) ==
      rows.map(r => (r.partition, r.seq, new String(r.value))))
    assert(read("19")._2 < read("-5")._2, s"bytes at -5 and 19: ${read("-5")._2}, ${read("19")._2}")
  }

  test("a session's codec wins (SNAPPY), and a delta's link columns are written and read back") {
    val (t, dir) = table(KernelTables.CompressionKey -> "SNAPPY")
    t.write(partition = 0, id = 5L, updateProgress = 10L, changelogVersion = 1L, bytes = blob.take(1000))
    t.write(partition = 0, id = 9L, updateProgress = 20L, changelogVersion = 2L, bytes = blob.slice(1000, 3000),
      link = Some((5L, 5L)))
    assert(files(dir, 0).forall(f => codecs(f) == Set(CompressionCodecName.SNAPPY)))
    val chain = t.latestChain(0)
    assert(chain.map(s => (s.id, s.baseId, s.parentId)) == Seq((5L, None, None), (9L, Some(5L), Some(5L))))
    assert(chain(1).bytes.sameElements(blob.slice(1000, 3000)))
  }
}
