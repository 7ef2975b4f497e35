package io.sharedstate.spark.durable

import io.delta.kernel.{Operation, Table, Transaction}
import io.delta.kernel.data.Row
import io.delta.kernel.engine.Engine
import io.delta.kernel.exceptions.{ConcurrentTransactionException, KernelException, MetadataChangedException}
import io.delta.kernel.expressions.{Column, Literal, Predicate}
import io.delta.kernel.internal.DeltaLogActionUtils.DeltaAction
import io.delta.kernel.internal.{InternalScanFileUtils, TableImpl}
import io.delta.kernel.internal.data.TransactionStateRow
import io.delta.kernel.internal.util.Utils
import io.delta.kernel.types.{LongType, StringType, StructType}
import io.delta.kernel.utils.DataFileStatus
import io.sharedstate.core.SharedStateException
import java.util.Optional
import org.apache.hadoop.conf.Configuration
import org.apache.spark.util.SerializableConfiguration
import scala.jdk.CollectionConverters._
import scala.jdk.OptionConverters._

/**
 * The changelog Delta table of one State (see [[ChangelogSchema]]), written and read with Delta
 * Kernel. Tasks write Parquet files through a [[ChangelogTarget]]; the driver commits each epoch's
 * files in one Delta transaction carrying Delta's SetTransaction (app id = writer, version = epoch),
 * so an epoch that is committed again (a re-run after a failure) adds nothing twice.
 */
private[sharedstate] final class DeltaChangelog private (val path: String, conf: Configuration) {
  import DeltaChangelog._

  // The tasks' files and the driver's are written zstd-compressed (see KernelTables.compressed).
  private val hadoopConf = KernelTables.compressed(conf)
  private val engine: Engine = KernelTables.engine(hadoopConf)
  private val table = Table.forPath(engine, path)
  // The owner's lease generation once it took the table over (see takeOver); None: unfenced (tests, readers).
  @volatile private var fence: Option[Long] = None

  /**
   * The fence of an owner whose lease is generation `generation`: the table property
   * `sharedstate.ownerGeneration` is set to it in a commit of its own (a metadata change), before the
   * owner reads the table to recover. From then on every commit of this object checks, at the
   * version its transaction reads, that the property is still its generation, and a newer owner's
   * takeover committed after that version makes Delta's conflict check refuse the commit (a winning
   * metadata change): an owner that was taken over commits nothing more.
   */
  def takeOver(generation: Long): Unit = {
    val current = ownerGeneration(table.getLatestSnapshot(engine).getTableProperties)
    if (current > generation) throw fenced(generation, current)
    fence = Some(generation)
    if (current < generation) {
      val txn = build(Operation.MANUAL_UPDATE, None, Map(OwnerGenerationProperty -> generation.toString))
      commitFenced(KernelTables.commit(engine, txn, Nil))
    }
  }

  /** What the write tasks need to write files for this table. */
  def target(partitionCount: Int): ChangelogTarget = {
    val txnState = newTransaction(None).getTransactionState(engine)
    val dirs = (JournalPartitionIndex until partitionCount).map { p =>
      Transaction.getWriteContext(engine, txnState, partitionValue(p)).getTargetDirectory
    }
    ChangelogTarget(path, partitionCount, dirs, new SerializableConfiguration(hadoopConf))
  }

  /**
   * Commits `files` as epoch `epoch` of `writer`. Returns the new table version, or None when
   * the table already holds this epoch (or a later one) of the writer: then nothing was added.
   */
  def commitEpoch(writer: String, epoch: Long, files: Seq[ChangelogFile]): Option[Long] =
    try Some(commit(newTransaction(Some((writer, epoch))), files))
    catch { case _: ConcurrentTransactionException => None }

  /** Commits `files` with no idempotence guard (progress events that replay tolerates twice). */
  def commitFiles(files: Seq[ChangelogFile]): Long = commit(newTransaction(None), files)

  /** The last epoch of `writer` this table holds (Delta's SetTransaction), if any. */
  def lastEpoch(writer: String): Option[Long] =
    table.getLatestSnapshot(engine).getLatestTransactionVersion(engine, writer).toScala.map(_.longValue)

  def latestVersion: Long = table.getLatestSnapshot(engine).getVersion

  /**
   * Per State partition, the last journal event whose updates retention removed from the table at
   * `version` (default latest): recovery must start that partition from a snapshot holding it. Kept
   * as a table property, so it survives Delta's log cleanup and checkpoints.
   */
  def trimmedThrough(version: Option[Long] = None): Map[Int, Long] = {
    val snapshot = version.fold(table.getLatestSnapshot(engine))(v => table.getSnapshotAsOfVersion(engine, v))
    Option(snapshot.getTableProperties.get(TrimmedThroughProperty)).fold(Map.empty[Int, Long]) { text =>
      text.split(',').filter(_.nonEmpty).map { pair =>
        val Array(p, id) = pair.split(':'); p.toInt -> id.toLong
      }.toMap
    }
  }

  /**
   * The newest version from `from` to `to` at which retention had trimmed no partition p past `bound(p)`
   * (an update of a journal event above it still in the table), None when not even `from` is or its log
   * is gone. What a reader of another application's tables replays up to when the owner's retention
   * trimmed files it has not read: a trim writes only the log, so that version's files are on disk.
   * Trims only grow with the versions: steps back from `to`, doubling, then bisects.
   */
  def newestNotTrimmedPast(bound: Int => Long, from: Long, to: Long): Option[Long] = {
    def ok(v: Long) =
      scala.util.Try(trimmedThrough(Some(v)).forall { case (p, through) => through <= bound(p) }).getOrElse(false)
    if (ok(to)) Some(to)
    else {
      var (good, bad, step) = (-1L, to, 1L)
      while (good < 0 && bad > from) {
        val v = math.max(from, bad - step)
        if (ok(v)) good = v else { bad = v; step *= 2 }
      }
      while (good >= 0 && bad - good > 1) {
        val mid = (good + bad) / 2
        if (ok(mid)) good = mid else bad = mid
      }
      Option.when(good >= 0)(good)
    }
  }

  /**
   * Retention's trim, planned: the data files of State partitions in `covered` (partition -> writer ->
   * the writer's last covered epoch) whose every row is an update of a covered epoch, at the latest
   * version. Decides a file from its footer's writer and epoch statistics ([[ChangelogFooters]]), else
   * from those two columns; under no lock: only retention removes files, one trim at a time. A file
   * holding any other row is left whole (replay skips the covered rows it still holds, as it did before
   * the trim); a writer task's file holds one epoch of one writer.
   */
  def coveredFiles(covered: Map[Int, Map[String, Long]]): CoveredFiles = {
    val snapshot = table.getLatestSnapshot(engine)
    val columns = new StructType().add(ChangelogSchema.Writer, StringType.STRING, false)
      .add(ChangelogSchema.Epoch, LongType.LONG, false)
    val files = KernelTables.scanFiles(engine, snapshot, None) { scanFile =>
      val partition = InternalScanFileUtils.getPartitionValues(scanFile).get(ChangelogSchema.Partition).toInt
      covered.get(partition).flatMap { epochs =>
        val status = InternalScanFileUtils.getAddFileStatus(scanFile)
        val all = ChangelogFooters.allCovered(status.getPath, hadoopConf, epochs).getOrElse {
          val batches = engine.getParquetHandler.readParquetFiles(Utils.singletonCloseableIterator(status), columns,
            Optional.empty())
          try batches.asScala.forall { read =>
              val b = read.getData
              val (writers, epochNumbers) = (b.getColumnVector(0), b.getColumnVector(1))
              (0 until b.getSize).forall(i => epochs.get(writers.getString(i)).exists(epochNumbers.getLong(i) <= _))
            }
          finally batches.close()
        }
        Option.when(all)(KernelTables.removeAction(scanFile))
      }
    }.flatten
    CoveredFiles(files.map(_._1), files.map(_._2).sum)
  }

  /**
   * Records that retention removed the updates of `bounds` (partition -> last journal event removed)
   * and removes `files` in the same commit, which writes only the log: a trimmed table is never without
   * its record. With no files, only the record.
   */
  def markTrimmed(bounds: Map[Int, Long], files: CoveredFiles = CoveredFiles.Empty): Long = {
    val before = trimmedThrough()
    val merged = before ++ bounds.map { case (p, id) => p -> math.max(id, before.getOrElse(p, -1L)) }
    val text = merged.toSeq.sortBy(_._1).map { case (p, id) => s"$p:$id" }.mkString(",")
    commitFenced(KernelTables.commit(engine, build(Operation.MANUAL_UPDATE, None, Map(TrimmedThroughProperty -> text)),
        files.removes))
  }

  /**
   * The rows of `partition` at `version` (default: latest), in no particular order; only from the
   * data files whose path `readFile` accepts.
   */
  def readPartition(partition: Int, version: Option[Long] = None, readFile: String => Boolean = _ => true)
      : IndexedSeq[ChangelogRow] = {
    val snapshot = version.fold(table.getLatestSnapshot(engine))(v => table.getSnapshotAsOfVersion(engine, v))
    val filter = new Predicate("=", new Column(ChangelogSchema.Partition), Literal.ofInt(partition))
    KernelTables.scan(engine, snapshot, Some(filter), ChangelogSchema.physical, readFile)(toChangelogRow)
      .filter(_.partition == partition).toIndexedSeq
  }

  /**
   * The data files added by versions `after` + 1 to `upTo`: file name -> the version that added it,
   * read from those versions' commit files only (Delta's change log), so its cost follows the tail,
   * not the table's history. None when the log no longer has one of those commits (log cleanup).
   */
  def filesAddedAfter(after: Long, upTo: Long): Option[Map[String, Long]] =
    if (after >= upTo) Some(Map.empty)
    else
      try {
        val out = Map.newBuilder[String, Long]
        val changes =
          table.asInstanceOf[TableImpl].getChanges(engine, after + 1, upTo, java.util.Set.of(DeltaAction.ADD))
        try changes.asScala.foreach { batch =>
            val versions = batch.getColumnVector(batch.getSchema.indexOf("version"))
            val adds = batch.getColumnVector(batch.getSchema.indexOf(DeltaAction.ADD.colName))
            val paths = adds.getChild(DeltaAction.ADD.schema.indexOf("path"))
            (0 until batch.getSize).foreach { i =>
              if (!adds.isNullAt(i)) out += fileName(paths.getString(i)) -> versions.getLong(i)
            }
          }
        finally changes.close()
        Some(out.result())
      } catch { case _: KernelException => None }

  /** The paths of the data files of `version`. */
  def filesOf(version: Long): Set[String] = {
    val paths = collection.mutable.Set.empty[String]
    KernelTables.scan(engine, table.getSnapshotAsOfVersion(engine, version), None, ChangelogSchema.physical,
      { path => paths += path; false })(identity)
    paths.toSet
  }

  /**
   * The rows of the data files of `version` that are not in `seen` (paths), and every file path of
   * that version: what a reader following the table reads after the last version it read.
   */
  def readNewFiles(version: Long, seen: collection.Set[String]): (IndexedSeq[ChangelogRow], Set[String]) = {
    val paths = collection.mutable.Set.empty[String]
    val rows = KernelTables.scan(engine, table.getSnapshotAsOfVersion(engine, version), None, ChangelogSchema.physical,
      { path => paths += path; !seen.contains(path) })(toChangelogRow)
    (rows.toIndexedSeq, paths.toSet)
  }

  private def newTransaction(txnId: Option[(String, Long)]): Transaction = build(Operation.STREAMING_UPDATE, txnId)

  // A transaction, checked against the fence at the version it reads.
  private def build(operation: Operation, txnId: Option[(String, Long)],
      properties: Map[String, String] = Map.empty): Transaction = {
    val builder = table.createTransactionBuilder(engine, KernelTables.EngineInfo, operation)
    txnId.foreach { case (app, version) => builder.withTransactionId(engine, app, version) }
    if (properties.nonEmpty) builder.withTableProperties(engine, properties.asJava)
    val txn = builder.build(engine)
    fence.foreach { mine =>
      val current = ownerGeneration(TransactionStateRow.getConfiguration(txn.getTransactionState(engine)))
      if (current > mine) throw fenced(mine, current)
    }
    txn
  }

  // A newer owner's takeover committed after the version the transaction read: Delta's conflict check
  // refuses the commit with a metadata change (nothing was added).
  private def commitFenced[T](body: => T): T =
    try body
    catch {
      case e: MetadataChangedException if fence.nonEmpty =>
        val current = ownerGeneration(table.getLatestSnapshot(engine).getTableProperties)
        if (current > fence.get) throw fenced(fence.get, current) else throw e
    }

  private def fenced(mine: Long, current: Long): SharedStateException = new SharedStateException(
    s"The changelog at $path was taken over by a newer owner (lease generation $current; this application held " +
      s"generation $mine of the lease in ${new org.apache.hadoop.fs.Path(path).getParent}/owner): its commit is " +
      "refused, and it takes no further commits. Stop it, or open the State read-only.")

  private def commit(txn: Transaction, files: Seq[ChangelogFile]): Long = commitFenced {
    val txnState = txn.getTransactionState(engine)
    val actions = files.flatMap { f =>
      val status = new DataFileStatus(f.path, f.size, f.modificationTime, Optional.empty())
      val context = Transaction.getWriteContext(engine, txnState, partitionValue(f.partition))
      val it = Transaction.generateAppendActions(engine, txnState, Utils.singletonCloseableIterator(status), context)
      try it.asScala.toList
      finally it.close()
    }
    KernelTables.commit(engine, txn, actions)
  }
}

private[sharedstate] object DeltaChangelog {

  /** A data file's name: unique within the table, and the same in a log entry (relative) and a scan (absolute). */
  def fileName(path: String): String = path.substring(path.lastIndexOf('/') + 1)

  private val JournalPartitionIndex = ChangelogSchema.JournalPartition

  /** The table property holding the lease generation of the changelog's owner (see [[DeltaChangelog.takeOver]]). */
  val OwnerGenerationProperty = "sharedstate.ownerGeneration"

  private def ownerGeneration(properties: java.util.Map[String, String]): Long =
    Option(properties.get(OwnerGenerationProperty)).fold(0L)(_.toLong)

  /** The table property recording retention's trims (see [[DeltaChangelog.trimmedThrough]]). */
  val TrimmedThroughProperty = "sharedstate.trimmedThrough"

  /** Opens the existing changelog at `path` (never creates one: a missing table fails on first use). */
  def open(path: String, hadoopConf: Configuration): DeltaChangelog = new DeltaChangelog(path, hadoopConf)

  /** Opens the changelog at `path`, creating an empty one if there is no table yet. */
  def openOrCreate(path: String, hadoopConf: Configuration): DeltaChangelog = {
    KernelTables.create(KernelTables.engine(hadoopConf), path, ChangelogSchema.table, Seq(ChangelogSchema.Partition))
    new DeltaChangelog(path, hadoopConf)
  }

  def exists(path: String, hadoopConf: Configuration): Boolean =
    KernelTables.exists(KernelTables.engine(hadoopConf), path)

  private def partitionValue(p: Int): java.util.Map[String, Literal] =
    java.util.Map.of(ChangelogSchema.Partition, Literal.ofInt(p))

  private def toChangelogRow(row: Row): ChangelogRow = {
    val r = new KernelTables.Named(row)
    import ChangelogSchema._
    ChangelogRow(
      partition = r.int(Partition),
      writer = r.string(Writer),
      epoch = r.long(Epoch),
      task = r.int(Task),
      seq = r.int(Seq_),
      key = r.binary(Key),
      timestamp = r.longOrNull(Timestamp),
      value = r.binary(Value),
      event = r.string(Event),
      updateProgress = r.longOrNull(UpdateProgress),
      writerProgress = r.longOrNull(WriterProgress),
      commitSeq = r.longOrNull(CommitSeq)
    )
  }
}
