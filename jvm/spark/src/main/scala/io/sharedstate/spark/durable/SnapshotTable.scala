package io.sharedstate.spark.durable

import io.delta.kernel.{Operation, Table}
import io.delta.kernel.defaults.engine.DefaultEngine
import io.delta.kernel.expressions.{Column, Literal, Predicate}
import io.delta.kernel.types.{BinaryType, IntegerType, LongType, StructField, StructType}
import org.apache.hadoop.conf.Configuration
import scala.jdk.CollectionConverters._

/**
 * One stored snapshot of a partition: the engine's snapshot bytes and the journal events it holds.
 * `changelogVersion`: a changelog table version that has every event it holds and none after (None
 * for snapshots written before it was recorded); recovery reads only changelog files added after it.
 */
final case class StoredSnapshot(partition: Int, id: Long, updateProgress: Long, changelogVersion: Option[Long],
    bytes: Array[Byte])

/**
 * The snapshots table of a State, `<root>/<state>/snapshots`, partitioned by `partition`: each
 * snapshot of a partition is the engine's versioned snapshot blob (SnapshotCodec) cut into chunks,
 * one row per chunk, committed in one Delta transaction. Its id is the order number of the last
 * journal event it includes: recovery replays the changelog's commits after it, reading only the
 * changelog files added after its `changelog_version`.
 */
final class SnapshotTable private (val path: String, conf: Configuration, chunkBytes: Int) {
  import SnapshotTable._
  private val engine = DefaultEngine.create(conf)
  private val table = Table.forPath(engine, path)

  def write(partition: Int, id: Long, updateProgress: Long, changelogVersion: Long, bytes: Array[Byte]): Long = {
    val chunks = math.max(1, (bytes.length + chunkBytes - 1) / chunkBytes)
    val data = (0 until chunks).map(c => java.util.Arrays.copyOfRange(bytes, c * chunkBytes, math.min(bytes.length, (c + 1) * chunkBytes)))
    val now = java.lang.Long.valueOf(System.currentTimeMillis() * 1000L)
    val columns = IndexedSeq[Array[_ <: AnyRef]](
      Array.fill(chunks)(java.lang.Long.valueOf(id)), (0 until chunks).map(Integer.valueOf).toArray,
      Array.fill(chunks)(Integer.valueOf(chunks)), Array.fill(chunks)(java.lang.Long.valueOf(updateProgress)),
      data.toArray, Array.fill(chunks)(now), Array.fill(chunks)(java.lang.Long.valueOf(changelogVersion)))
    val txn = table.createTransactionBuilder(engine, KernelTables.EngineInfo, Operation.WRITE).build(engine)
    KernelTables.commit(engine, txn,
      KernelTables.writeFiles(engine, txn, Map(Partition -> Literal.ofInt(partition)), physical, columns, chunks))
  }

  /** The ids of the complete snapshots of `partition`, newest first. */
  def ids(partition: Int): Seq[Long] = ids(chunksOf(partition))

  private def ids(rows: Seq[ChunkRow]): Seq[Long] = rows.groupBy(_._1).collect {
    case (id, cs) if cs.map(_._2).toSet.size == cs.head._3 => id
  }.toSeq.sorted.reverse

  /** The newest complete snapshot of `partition`. */
  def latest(partition: Int): Option[StoredSnapshot] = newest(partition, _ => true)

  /** The newest complete snapshot of `partition` taken when U was at or before `time`. */
  def atOrBefore(partition: Int, time: Long): Option[StoredSnapshot] = newest(partition, _ <= time)

  /** U of the oldest complete snapshot of `partition`, if any. */
  def oldestProgress(partition: Int): Option[Long] = {
    val rows = chunksOf(partition)
    ids(rows).lastOption.flatMap(id => rows.find(_._1 == id)).map(_._4)
  }

  private def newest(partition: Int, progressOk: Long => Boolean): Option[StoredSnapshot] = {
    val rows = chunksOf(partition)
    ids(rows).find(id => rows.exists(r => r._1 == id && progressOk(r._4))).map { id =>
      val mine = rows.filter(_._1 == id).sortBy(_._2).distinctBy(_._2)
      val out = new java.io.ByteArrayOutputStream()
      mine.foreach(r => out.write(r._5))
      StoredSnapshot(partition, id, mine.head._4, Option(mine.head._6).map(_.longValue), out.toByteArray)
    }
  }

  // (id, chunk, chunks, update progress, bytes, changelog version or null) of every chunk of the partition
  private type ChunkRow = (Long, Int, Int, Long, Array[Byte], java.lang.Long)
  private def chunksOf(partition: Int): Seq[ChunkRow] = {
    val filter = new Predicate("=", new Column(Partition), Literal.ofInt(partition))
    val snapshot = table.getLatestSnapshot(engine)
    // A table created before changelog_version existed lacks it: read without it (unknown version).
    val recorded = snapshot.getSchema.indexOf(ChangelogVersion) >= 0
    val columns = if (recorded) physical else withoutChangelogVersion
    KernelTables.scan(engine, snapshot, Some(filter), columns) { row =>
      val r = new KernelTables.Named(row)
      (r.int(Partition), (r.long(SnapshotId), r.int(Chunk), r.int(Chunks), r.long(UpdateProgress), r.binary(Data),
        if (recorded) r.longOrNull(ChangelogVersion) else null))
    }.collect { case (p, chunk) if p == partition => chunk }
  }
}

object SnapshotTable {
  val Partition = "partition"
  val SnapshotId = "snapshot_id"
  val Chunk = "chunk"
  val Chunks = "chunks"
  val UpdateProgress = "update_progress"
  val Data = "data"
  val CreatedMicros = "created_micros"
  val ChangelogVersion = "changelog_version"
  val DefaultChunkBytes: Int = 4 << 20

  val physical: StructType = new StructType(Seq(
    new StructField(SnapshotId, LongType.LONG, false),
    new StructField(Chunk, IntegerType.INTEGER, false),
    new StructField(Chunks, IntegerType.INTEGER, false),
    new StructField(UpdateProgress, LongType.LONG, false),
    new StructField(Data, BinaryType.BINARY, false),
    new StructField(CreatedMicros, LongType.LONG, false),
    // nullable: tables written before it was recorded read back null (recovery then reads the whole changelog)
    new StructField(ChangelogVersion, LongType.LONG, true)).asJava)

  private[durable] val withoutChangelogVersion: StructType =
    new StructType(physical.fields().asScala.filter(_.getName != ChangelogVersion).asJava)

  val table: StructType = physical.add(new StructField(Partition, IntegerType.INTEGER, false))

  def openOrCreate(path: String, conf: Configuration, chunkBytes: Int = DefaultChunkBytes): SnapshotTable = {
    KernelTables.create(DefaultEngine.create(conf), path, table, Seq(Partition))
    new SnapshotTable(path, conf, chunkBytes)
  }
}
