package io.sharedstate.spark.durable

import io.delta.kernel.{Operation, Scan, Table, Transaction}
import io.delta.kernel.data.Row
import io.delta.kernel.defaults.engine.DefaultEngine
import io.delta.kernel.engine.Engine
import io.delta.kernel.exceptions.{ConcurrentTransactionException, TableNotFoundException}
import io.delta.kernel.expressions.{Column, Literal, Predicate}
import io.delta.kernel.internal.InternalScanFileUtils
import io.delta.kernel.internal.util.Utils
import io.delta.kernel.utils.{CloseableIterable, DataFileStatus}
import java.util.Optional
import org.apache.hadoop.conf.Configuration
import org.apache.spark.util.SerializableConfiguration
import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._
import scala.jdk.OptionConverters._

/**
 * The changelog Delta table of one State (see [[ChangelogSchema]]), written and read with Delta
 * Kernel. Tasks write Parquet files through a [[ChangelogTarget]]; the driver commits each epoch's
 * files in one Delta transaction carrying Delta's SetTransaction (app id = writer, version = epoch),
 * so an epoch that is committed again (a re-run after a failure) adds nothing twice.
 */
final class DeltaChangelog private (val path: String, hadoopConf: Configuration) {
  import DeltaChangelog._

  private val engine: Engine = DefaultEngine.create(hadoopConf)
  private val table = Table.forPath(engine, path)

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

  /** The rows of `partition` at `version` (default: latest), in no particular order. */
  def readPartition(partition: Int, version: Option[Long] = None): IndexedSeq[ChangelogRow] = {
    val snapshot = version.fold(table.getLatestSnapshot(engine))(v => table.getSnapshotAsOfVersion(engine, v))
    val scan = snapshot.getScanBuilder
      .withFilter(new Predicate("=", new Column(ChangelogSchema.Partition), Literal.ofInt(partition)))
      .build()
    val out = ArrayBuffer.empty[ChangelogRow]
    read(scan).foreach(r => if (r.partition == partition) out += r)
    out.toIndexedSeq
  }

  private def read(scan: Scan): Iterator[ChangelogRow] = {
    val scanState = scan.getScanState(engine)
    val scanFiles = scan.getScanFiles(engine)
    val rows = ArrayBuffer.empty[ChangelogRow]
    try scanFiles.asScala.foreach { fileBatch =>
      val fileRows = fileBatch.getRows
      try fileRows.asScala.foreach { scanFile =>
        val status = InternalScanFileUtils.getAddFileStatus(scanFile)
        val physical = engine.getParquetHandler
          .readParquetFiles(Utils.singletonCloseableIterator(status), ChangelogSchema.physical, Optional.empty())
          .map[io.delta.kernel.data.ColumnarBatch](_.getData)
        val logical = Scan.transformPhysicalData(engine, scanState, scanFile, physical)
        try logical.asScala.foreach { b =>
          val batchRows = b.getRows
          try batchRows.asScala.foreach(r => rows += toChangelogRow(r)) finally batchRows.close()
        } finally logical.close()
      } finally fileRows.close()
    } finally scanFiles.close()
    rows.iterator
  }

  private def newTransaction(txnId: Option[(String, Long)]): Transaction = {
    val builder = table.createTransactionBuilder(engine, EngineInfo, Operation.STREAMING_UPDATE)
    txnId.foreach { case (app, version) => builder.withTransactionId(engine, app, version) }
    builder.build(engine)
  }

  private def commit(txn: Transaction, files: Seq[ChangelogFile]): Long = {
    val txnState = txn.getTransactionState(engine)
    val actions = files.flatMap { f =>
      val status = new DataFileStatus(f.path, f.size, f.modificationTime, Optional.empty())
      val context = Transaction.getWriteContext(engine, txnState, partitionValue(f.partition))
      val it = Transaction.generateAppendActions(engine, txnState, Utils.singletonCloseableIterator(status), context)
      try it.asScala.toList finally it.close()
    }
    txn.commit(engine, CloseableIterable.inMemoryIterable(Utils.toCloseableIterator(actions.iterator.asJava))).getVersion
  }
}

object DeltaChangelog {
  val EngineInfo = "sharedstate"
  private val JournalPartitionIndex = ChangelogSchema.JournalPartition

  /** Opens the changelog at `path`, creating an empty one if there is no table yet. */
  def openOrCreate(path: String, hadoopConf: Configuration): DeltaChangelog = {
    if (!exists(path, hadoopConf)) {
      val engine = DefaultEngine.create(hadoopConf)
      Table.forPath(engine, path).createTransactionBuilder(engine, EngineInfo, Operation.CREATE_TABLE)
        .withSchema(engine, ChangelogSchema.table)
        .withPartitionColumns(engine, ChangelogSchema.partitionColumns)
        .build(engine)
        .commit(engine, CloseableIterable.emptyIterable[Row]())
    }
    new DeltaChangelog(path, hadoopConf)
  }

  def exists(path: String, hadoopConf: Configuration): Boolean = {
    val engine = DefaultEngine.create(hadoopConf)
    try { Table.forPath(engine, path).getLatestSnapshot(engine); true }
    catch { case _: TableNotFoundException => false }
  }

  private def partitionValue(p: Int): java.util.Map[String, Literal] =
    java.util.Map.of(ChangelogSchema.Partition, Literal.ofInt(p))

  private def toChangelogRow(r: Row): ChangelogRow = {
    val s = r.getSchema
    def idx(name: String) = s.indexOf(name)
    def long(name: String): java.lang.Long = { val i = idx(name); if (r.isNullAt(i)) null else java.lang.Long.valueOf(r.getLong(i)) }
    def bin(name: String): Array[Byte] = { val i = idx(name); if (r.isNullAt(i)) null else r.getBinary(i) }
    def str(name: String): String = { val i = idx(name); if (r.isNullAt(i)) null else r.getString(i) }
    ChangelogRow(
      partition = r.getInt(idx(ChangelogSchema.Partition)),
      writer = str(ChangelogSchema.Writer),
      epoch = r.getLong(idx(ChangelogSchema.Epoch)),
      task = r.getInt(idx(ChangelogSchema.Task)),
      seq = r.getInt(idx(ChangelogSchema.Seq_)),
      key = bin(ChangelogSchema.Key),
      timestamp = long(ChangelogSchema.Timestamp),
      value = bin(ChangelogSchema.Value),
      event = str(ChangelogSchema.Event),
      updateProgress = long(ChangelogSchema.UpdateProgress),
      writerProgress = long(ChangelogSchema.WriterProgress),
      commitSeq = long(ChangelogSchema.CommitSeq))
  }
}
