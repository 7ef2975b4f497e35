package io.sharedstate.spark.durable

import io.delta.kernel.{Operation, Table, Transaction}
import io.delta.kernel.expressions.{Column, Literal, Predicate}
import io.delta.kernel.internal.InternalScanFileUtils
import io.delta.kernel.internal.util.Utils
import io.delta.kernel.types.{BinaryType, IntegerType, LongType, StructField, StructType}
import java.util.Optional
import org.apache.hadoop.conf.Configuration
import scala.jdk.CollectionConverters._

/**
 * One stored snapshot of a partition: the engine's snapshot bytes and the journal events it holds.
 * `changelogVersion`: a changelog table version that has every event it holds and none after (None
 * for snapshots written before it was recorded); recovery reads only changelog files added after it.
 * `baseId`/`parentId`: None for a full snapshot; for a delta (only the keys changed since `parentId`),
 * the full snapshot its chain starts at and the snapshot it applies on.
 */
private[sharedstate] final case class StoredSnapshot(partition: Int, id: Long, updateProgress: Long,
    changelogVersion: Option[Long],
    bytes: Array[Byte], baseId: Option[Long] = None, parentId: Option[Long] = None) {
  def isDelta: Boolean = parentId.nonEmpty
}

/** A snapshot's Parquet files, written but not yet committed to the snapshots table (see [[SnapshotTable.commit]]). */
private[sharedstate] final case class SnapshotFiles(partition: Int, written: Seq[io.delta.kernel.utils.DataFileStatus])

/** The table's columns and a transaction's state, read once per round: what writing a snapshot's files needs. */
private[sharedstate] final case class SnapshotTarget(schema: StructType, txnState: io.delta.kernel.data.Row)

/** A complete stored snapshot without its bytes: what chains and retention are worked out from. */
private[sharedstate] final case class SnapshotLink(id: Long, updateProgress: Long, baseId: Option[Long],
    parentId: Option[Long]) {
  def isDelta: Boolean = parentId.nonEmpty

  /** The full snapshot this one's chain starts at (itself for a full one). */
  def base: Long = baseId.getOrElse(id)
}

/**
 * The snapshots table of a State, `<root>/<state>/snapshots`, partitioned by `partition`: each
 * snapshot of a partition is the engine's versioned snapshot blob (SnapshotCodec) cut into chunks,
 * one row per chunk, committed in one Delta transaction. Its id is the order number of the last
 * journal event it includes: recovery replays the changelog's commits after it, reading only the
 * changelog files added after its `changelog_version`. A snapshot is full, or a delta (`base_id` and
 * `parent_id` set) holding only the keys changed since its parent; a restore point is a snapshot
 * whose chain (its full snapshot, then each delta up to it) is complete, loaded in that order.
 */
private[sharedstate] final class SnapshotTable private (val path: String, conf: Configuration, chunkBytes: Int) {
  import SnapshotTable._
  // zstd-compressed Parquet at level -1 (see KernelTables.compressed), without a dictionary: each chunk
  // is a distinct 4 MB value, which Parquet's dictionary writer would only hash before falling back to plain.
  private val writeConf = {
    val c = KernelTables.compressed(conf)
    c.setIfUnset(KernelTables.DictionaryKey, "false")
    c
  }
  private val engine = KernelTables.engine(writeConf)
  private val table = Table.forPath(engine, path)

  /** Whether the table has the `base_id`/`parent_id` columns (tables created before deltas do not: they hold full snapshots only). */
  def recordsChains: Boolean = {
    val schema = table.getLatestSnapshot(engine).getSchema
    schema.indexOf(BaseId) >= 0 && schema.indexOf(ParentId) >= 0
  }

  /** Writes a snapshot; `link`: (base id, parent id) of a delta, None for a full snapshot. */
  def write(partition: Int, id: Long, updateProgress: Long, changelogVersion: Long, bytes: Array[Byte],
      link: Option[(Long, Long)] = None): Long =
    commit(Seq(writeFiles(target(), partition, id, updateProgress, changelogVersion, IndexedSeq(bytes), link)))

  /** What writing files needs of the table, read once for a whole round: its columns and a transaction's state. */
  def target(): SnapshotTarget = {
    val txn = newTransaction()
    SnapshotTarget(txn.getSchema(engine), txn.getTransactionState(engine))
  }

  /**
   * Writes a snapshot's Parquet files, not yet part of the table: [[commit]] adds them. `blocks`, end
   * to end, are the snapshot's bytes: one chunk row each (cut where one is longer than the chunk size).
   * Safe to call from several threads at once (a round writes its partitions in parallel).
   */
  def writeFiles(target: SnapshotTarget, partition: Int, id: Long, updateProgress: Long, changelogVersion: Long,
      blocks: IndexedSeq[Array[Byte]], link: Option[(Long, Long)]): SnapshotFiles = {
    val present = target.schema
    require(
      link.isEmpty || (present.indexOf(BaseId) >= 0 && present.indexOf(ParentId) >= 0),
      s"the snapshots table at $path has no $BaseId/$ParentId columns: it holds full snapshots only"
    )
    val data = blocks.flatMap { b =>
      if (b.length <= chunkBytes) Iterator.single(b)
      else Iterator.range(0, b.length, chunkBytes).map(at =>
        java.util.Arrays.copyOfRange(b, at, math.min(b.length, at + chunkBytes)))
    }
    val chunks = data.length
    val now = java.lang.Long.valueOf(System.currentTimeMillis() * 1000L)
    def longs(v: Option[Long]): Array[java.lang.Long] = Array.fill(chunks)(v.map(java.lang.Long.valueOf).orNull)
    val all = IndexedSeq[Array[_ <: AnyRef]](
      Array.fill(chunks)(java.lang.Long.valueOf(id)),
      (0 until chunks).map(Integer.valueOf).toArray,
      Array.fill(chunks)(Integer.valueOf(chunks)),
      Array.fill(chunks)(java.lang.Long.valueOf(updateProgress)),
      data.toArray,
      Array.fill(chunks)(now),
      Array.fill(chunks)(java.lang.Long.valueOf(changelogVersion)),
      longs(link.map(_._1)),
      longs(link.map(_._2))
    )
    // Only the columns the table has (an older table lacks the nullable ones added since).
    val kept = physical.fields().asScala.zip(all).filter { case (f, _) => present.indexOf(f.getName) >= 0 }
    val columns = kept.map(_._2).toIndexedSeq
    val schema = new StructType(kept.map(_._1).asJava)
    // Parquet's writer, not Kernel's: Kernel's does not hand Parquet the zstd level (see ColumnsParquetWriter).
    val directory =
      Transaction.getWriteContext(engine, target.txnState, partitionValues(partition).asJava).getTargetDirectory
    SnapshotFiles(partition, Seq(ColumnsParquetWriter.write(writeConf, directory, schema, columns, chunks)))
  }

  /**
   * Adds snapshots' files (of one partition or several: a round's) in one Delta transaction built at
   * the table's latest version; commits go one at a time, so callers on several threads never race.
   */
  def commit(files: Seq[SnapshotFiles]): Long = commitLock.synchronized {
    val txn = newTransaction()
    val txnState = txn.getTransactionState(engine)
    KernelTables.commit(engine, txn,
      files.flatMap(f => KernelTables.appendActions(engine, txnState, partitionValues(f.partition), f.written)))
  }

  /**
   * Retention: removes the snapshots of each partition in `keepFrom` (partition -> its oldest kept
   * snapshot id) whose id is smaller, by one commit of remove actions that writes only the log (older
   * table versions still read the files until Delta's VACUUM deletes them). A snapshot's rows are files
   * of their own ([[writeFiles]]), so a file goes whole, decided from its footer (else its ids column);
   * a file that also holds a kept snapshot (only another tool's rewrite makes one) stays whole.
   */
  def removeOlderThan(keepFrom: Map[Int, Long]): CoveredFiles = {
    val ids = new StructType().add(SnapshotId, LongType.LONG, false)
    val removes = KernelTables.scanFiles(engine, table.getLatestSnapshot(engine), None) { scanFile =>
      val partition = InternalScanFileUtils.getPartitionValues(scanFile).get(Partition).toInt
      keepFrom.get(partition).flatMap { keep =>
        val status = InternalScanFileUtils.getAddFileStatus(scanFile)
        val newest = SnapshotFooters.idRange(status.getPath, writeConf).map(_._2).getOrElse {
          val batches =
            engine.getParquetHandler.readParquetFiles(Utils.singletonCloseableIterator(status), ids, Optional.empty())
          try batches.asScala.map { read =>
              val b = read.getData
              (0 until b.getSize).map(b.getColumnVector(0).getLong).maxOption.getOrElse(Long.MinValue)
            }.maxOption.getOrElse(Long.MinValue)
          finally batches.close()
        }
        Option.when(newest < keep)(KernelTables.removeAction(scanFile))
      }
    }.flatten
    if (removes.nonEmpty) commitLock.synchronized {
      val txn = table.createTransactionBuilder(engine, KernelTables.EngineInfo, Operation.MANUAL_UPDATE).build(engine)
      KernelTables.commit(engine, txn, removes.map(_._1))
    }
    CoveredFiles(removes.map(_._1), removes.map(_._2).sum)
  }

  private val commitLock = new Object
  private def newTransaction() =
    table.createTransactionBuilder(engine, KernelTables.EngineInfo, Operation.WRITE).build(engine)
  private def partitionValues(partition: Int) = Map(Partition -> Literal.ofInt(partition))

  /** The ids of the restore points of `partition` (complete snapshots whose chain is complete), newest first. */
  def ids(partition: Int): Seq[Long] = links(partition).map(_.id)

  /** The restore points of `partition`, newest first, without their bytes. */
  def links(partition: Int): Seq[SnapshotLink] = restorable(linksOf(chunksOf(partition, withData = false)))

  /** The restore points of every partition (newest first; partitions without one absent), in one scan. */
  def allLinks(): Map[Int, Seq[SnapshotLink]] = {
    val snapshot = table.getLatestSnapshot(engine)
    val present = snapshot.getSchema
    val columns = new StructType(
      physical.fields().asScala.filter(f => present.indexOf(f.getName) >= 0 && f.getName != Data).asJava)
    val readSchema = columns.add(new StructField(Partition, IntegerType.INTEGER, false))
    def has(name: String) = columns.indexOf(name) >= 0
    KernelTables.scan(engine, snapshot, None, columns, readSchema = Some(readSchema)) { row =>
      val r = new KernelTables.Named(row)
      r.int(Partition) -> ChunkRow(
        r.long(SnapshotId),
        r.int(Chunk),
        r.int(Chunks),
        r.long(UpdateProgress),
        null,
        if (has(ChangelogVersion)) r.longOrNull(ChangelogVersion) else null,
        if (has(BaseId)) r.longOrNull(BaseId) else null,
        if (has(ParentId)) r.longOrNull(ParentId) else null
      )
    }.groupBy(_._1).map { case (p, rows) => p -> restorable(linksOf(rows.map(_._2))) }.filter(_._2.nonEmpty)
  }

  /** The newest restore point of `partition` (its newest link; see [[latestChain]]). */
  def latest(partition: Int): Option[StoredSnapshot] = latestChain(partition).lastOption

  /** The chain of the newest restore point of `partition`: its full snapshot, then its deltas in order (empty: none). */
  def latestChain(partition: Int): Seq[StoredSnapshot] = newest(partition, _ => true)

  /** The chain of the newest restore point of `partition` taken when U was at or before `time`. */
  def chainAtOrBefore(partition: Int, time: Long): Seq[StoredSnapshot] = newest(partition, _ <= time)

  /** U of the oldest restore point of `partition`, if any. */
  def oldestProgress(partition: Int): Option[Long] = links(partition).lastOption.map(_.updateProgress)

  // The chain is found from the rows without their data; then only its links' data is kept.
  private def newest(partition: Int, progressOk: Long => Boolean): Seq[StoredSnapshot] = {
    val version = table.getLatestSnapshot(engine) // both reads at one table version
    val all = linksOf(chunksOf(partition, withData = false, version))
    restorable(all).find(l => progressOk(l.updateProgress)).map { tip =>
      val chain = chainOf(tip, all.map(l => l.id -> l).toMap).get
      val ids = chain.map(_.id).toSet
      val rows = chunksOf(partition, withData = true, version, keepData = ids)
      chain.map { link =>
        val mine = rows.filter(_.id == link.id).sortBy(_.chunk).distinctBy(_.chunk)
        val out = new java.io.ByteArrayOutputStream()
        mine.foreach(r => out.write(r.data))
        StoredSnapshot(partition, link.id, link.updateProgress, Option(mine.head.changelogVersion).map(_.longValue),
          out.toByteArray, link.baseId, link.parentId)
      }
    }.getOrElse(Nil)
  }

  // The complete snapshots (every chunk present), newest first.
  private def linksOf(rows: Seq[ChunkRow]): Seq[SnapshotLink] = rows.groupBy(_.id).collect {
    case (id, cs) if cs.map(_.chunk).toSet.size == cs.head.chunks =>
      val mine = cs.distinctBy(_.chunk)
      val h = mine.head
      SnapshotLink(id, h.updateProgress, Option(h.baseId).map(_.longValue), Option(h.parentId).map(_.longValue))
  }.toSeq.sortBy(-_.id)

  private def restorable(links: Seq[SnapshotLink]): Seq[SnapshotLink] = {
    val byId = links.map(l => l.id -> l).toMap
    links.filter(l => chainOf(l, byId).nonEmpty)
  }

  // tip's chain, full snapshot first; None when a link is missing or does not lead back to its base.
  private def chainOf(tip: SnapshotLink, byId: Map[Long, SnapshotLink]): Option[List[SnapshotLink]] = {
    @annotation.tailrec
    def walk(l: SnapshotLink, acc: List[SnapshotLink]): Option[List[SnapshotLink]] = l.parentId match {
      case None => if (l.id == tip.base) Some(l :: acc) else None
      case Some(parent) => byId.get(parent) match {
          case Some(p) if p.id < l.id && p.base == tip.base => walk(p, l :: acc)
          case _ => None
        }
    }
    walk(tip, Nil)
  }

  // `keepData`: the snapshots whose data is kept (the others' rows come back without it).
  private def chunksOf(partition: Int, withData: Boolean,
      snapshot: io.delta.kernel.Snapshot = table.getLatestSnapshot(engine),
      keepData: Long => Boolean = _ => true): Seq[ChunkRow] = {
    val filter = new Predicate("=", new Column(Partition), Literal.ofInt(partition))
    // A table created before a nullable column existed lacks it: read without it (null).
    val present = snapshot.getSchema
    val columns = new StructType(physical.fields().asScala.filter { f =>
      present.indexOf(f.getName) >= 0 && (withData || f.getName != Data)
    }.asJava)
    def has(name: String) = columns.indexOf(name) >= 0
    val readSchema = columns.add(new StructField(Partition, IntegerType.INTEGER, false))
    KernelTables.scan(engine, snapshot, Some(filter), columns, readSchema = Some(readSchema)) { row =>
      val r = new KernelTables.Named(row)
      val id = r.long(SnapshotId)
      val data = if (withData && keepData(id)) r.binary(Data) else null
      (r.int(Partition),
        ChunkRow(
          id,
          r.int(Chunk),
          r.int(Chunks),
          r.long(UpdateProgress),
          data,
          if (has(ChangelogVersion)) r.longOrNull(ChangelogVersion) else null,
          if (has(BaseId)) r.longOrNull(BaseId) else null,
          if (has(ParentId)) r.longOrNull(ParentId) else null
        ))
    }.collect { case (p, chunk) if p == partition => chunk }
  }
}

// One chunk row of a snapshot (data null when read without it).
private final case class ChunkRow(id: Long, chunk: Int, chunks: Int, updateProgress: Long, data: Array[Byte],
    changelogVersion: java.lang.Long, baseId: java.lang.Long, parentId: java.lang.Long)

private[sharedstate] object SnapshotTable {
  val Partition = "partition"
  val SnapshotId = "snapshot_id"
  val Chunk = "chunk"
  val Chunks = "chunks"
  val UpdateProgress = "update_progress"
  val Data = "data"
  val CreatedMicros = "created_micros"
  val ChangelogVersion = "changelog_version"
  val BaseId = "base_id"
  val ParentId = "parent_id"
  val DefaultChunkBytes: Int = 4 << 20

  val physical: StructType = new StructType(Seq(
      new StructField(SnapshotId, LongType.LONG, false),
      new StructField(Chunk, IntegerType.INTEGER, false),
      new StructField(Chunks, IntegerType.INTEGER, false),
      new StructField(UpdateProgress, LongType.LONG, false),
      new StructField(Data, BinaryType.BINARY, false),
      new StructField(CreatedMicros, LongType.LONG, false),
      // nullable: tables written before it was recorded read back null (recovery then reads the whole changelog)
      new StructField(ChangelogVersion, LongType.LONG, true),
      // null for a full snapshot; for a delta, the full snapshot its chain starts at and the snapshot it applies on
      new StructField(BaseId, LongType.LONG, true),
      new StructField(ParentId, LongType.LONG, true)
    ).asJava)

  // The columns of tables created before changelog_version, and before base_id/parent_id.
  private[durable] val withoutChangelogVersion: StructType =
    new StructType(physical.fields().asScala.filter(f => !Set(ChangelogVersion, BaseId, ParentId)(f.getName)).asJava)
  private[durable] val withoutChains: StructType =
    new StructType(physical.fields().asScala.filter(f => !Set(BaseId, ParentId)(f.getName)).asJava)

  val table: StructType = physical.add(new StructField(Partition, IntegerType.INTEGER, false))

  /** Opens the existing snapshots table at `path` (never creates one: a missing table fails on first use). */
  def open(path: String, conf: Configuration): SnapshotTable = new SnapshotTable(path, conf, DefaultChunkBytes)

  def openOrCreate(path: String, conf: Configuration, chunkBytes: Int = DefaultChunkBytes): SnapshotTable = {
    KernelTables.create(KernelTables.engine(conf), path, table, Seq(Partition))
    new SnapshotTable(path, conf, chunkBytes)
  }
}
