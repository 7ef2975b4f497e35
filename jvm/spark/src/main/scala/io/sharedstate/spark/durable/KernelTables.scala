package io.sharedstate.spark.durable

import io.delta.kernel.{Operation, Scan, Snapshot, Table, Transaction}
import io.delta.kernel.data.{ColumnarBatch, Row}
import io.delta.kernel.defaults.engine.DefaultEngine
import io.delta.kernel.engine.Engine
import io.delta.kernel.exceptions.TableNotFoundException
import io.delta.kernel.expressions.{Literal, Predicate}
import io.delta.kernel.internal.InternalScanFileUtils
import io.delta.kernel.internal.actions.{AddFile, SingleAction}
import io.delta.kernel.internal.data.TransactionStateRow
import io.delta.kernel.internal.util.Utils
import io.delta.kernel.types.StructType
import io.delta.kernel.utils.{CloseableIterable, DataFileStatus}
import java.util.Optional
import org.apache.hadoop.conf.Configuration
import scala.collection.mutable.ArrayBuffer
import scala.jdk.CollectionConverters._

/** The few Delta Kernel steps the durable tables share: create, write rows as files, scan rows. */
private[sharedstate] object KernelTables {
  val EngineInfo = "sharedstate"

  def exists(engine: Engine, path: String): Boolean =
    try { Table.forPath(engine, path).getLatestSnapshot(engine); true }
    catch { case _: TableNotFoundException => false }

  /** Kernel's default engine on `conf`, local files through [[ForkFreeRawLocalFileSystem]]. */
  def engine(conf: Configuration): Engine = DefaultEngine.create(ForkFreeRawLocalFileSystem.configure(conf))

  /** Creates an empty table (no-op if one exists). */
  def create(engine: Engine, path: String, schema: StructType, partitionColumns: Seq[String]): Unit =
    if (!exists(engine, path)) {
      Table.forPath(engine, path).createTransactionBuilder(engine, EngineInfo, Operation.CREATE_TABLE)
        .withSchema(engine, schema)
        .withPartitionColumns(engine, partitionColumns.asJava)
        .build(engine)
        .commit(engine, CloseableIterable.emptyIterable[Row]())
    }

  /**
   * Writes `rows` rows given as `columns` (in `physical` order: the table's columns without its
   * partition columns) as Parquet files of the partition `partitionValues`; returns the add actions
   * to commit with `txn`.
   */
  def writeFiles(engine: Engine, conf: Configuration, txn: Transaction, partitionValues: Map[String, Literal],
      physical: StructType, columns: IndexedSeq[Array[_ <: AnyRef]], rows: Int): Seq[Row] = {
    val txnState = txn.getTransactionState(engine)
    val directory = Transaction.getWriteContext(engine, txnState, partitionValues.asJava).getTargetDirectory
    appendActions(engine, txnState, partitionValues,
      Seq(ColumnsParquetWriter.write(conf, directory, physical, columns, rows)))
  }

  /** The add actions of files [[ColumnsParquetWriter]] wrote, for the transaction whose state is `txnState`. */
  def appendActions(engine: Engine, txnState: Row, partitionValues: Map[String, Literal],
      written: Seq[DataFileStatus]): Seq[Row] = {
    val context = Transaction.getWriteContext(engine, txnState, partitionValues.asJava)
    val actions =
      Transaction.generateAppendActions(engine, txnState, Utils.toCloseableIterator(written.iterator.asJava),
        context)
    try actions.asScala.toList
    finally actions.close()
  }

  /**
   * `conf` with Parquet's zstd codec at level -1 for the files the durable tables write (unless the
   * session sets `parquet.compression` or the level itself, e.g. `spark.hadoop.parquet.compression`),
   * which [[ColumnsParquetWriter]] hands Parquet; each file's footer names its codec, so readers take
   * old uncompressed files as they are. Local files through [[ForkFreeRawLocalFileSystem]].
   */
  def compressed(conf: Configuration): Configuration = {
    val c = ForkFreeRawLocalFileSystem.configure(conf)
    c.setIfUnset(CompressionKey, DefaultCompression)
    c.setIfUnset(ZstdLevelKey, DefaultZstdLevel)
    c
  }

  val CompressionKey = "parquet.compression"
  val DefaultCompression = "ZSTD"
  val ZstdLevelKey = "parquet.compression.codec.zstd.level"
  val DictionaryKey = "parquet.enable.dictionary"

  /**
   * zstd level -1, a fast level (Parquet's default is 3): the snapshot format's fixed-width fields
   * compress as well at -1 as at 1 or 3, about twice as fast as at 3 (benchmarks/durability/zstd_levels.py);
   * the changelog's rows about 7% worse than at 3, for a bulk load of 1M keys about 10% faster.
   */
  val DefaultZstdLevel = "-1"

  /** Commits `actions`; returns the new version (a checkpoint it calls for is written in the background). */
  def commit(engine: Engine, txn: Transaction, actions: Seq[Row]): Long = {
    val table = TransactionStateRow.getTablePath(txn.getTransactionState(engine))
    val result =
      txn.commit(engine, CloseableIterable.inMemoryIterable(Utils.toCloseableIterator(actions.iterator.asJava)))
    DeltaCheckpoints.afterCommit(engine, table, result)
    result.getVersion
  }

  /**
   * Every row of `snapshot` matching `filter` (partition pruning), with its partition columns; only
   * from the data files whose path `readFile` accepts (a reader following a table reads new files only).
   * `physical`: the table's columns without its partition columns, or a subset of them when
   * `readSchema` (that subset with the partition columns) is given.
   */
  def scan[T](engine: Engine, snapshot: Snapshot, filter: Option[Predicate], physical: StructType,
      readFile: String => Boolean = _ => true, readSchema: Option[StructType] = None)(f: Row => T): Seq[T] = {
    val builder = readSchema.fold(snapshot.getScanBuilder)(snapshot.getScanBuilder.withReadSchema)
    val scan = filter.fold(builder)(builder.withFilter).build()
    val scanState = scan.getScanState(engine)
    val out = ArrayBuffer.empty[T]
    val scanFiles = scan.getScanFiles(engine)
    try scanFiles.asScala.foreach { fileBatch =>
        val fileRows = fileBatch.getRows
        try fileRows.asScala.foreach { scanFile =>
            val status = InternalScanFileUtils.getAddFileStatus(scanFile)
            if (readFile(status.getPath)) {
              val data = engine.getParquetHandler
                .readParquetFiles(Utils.singletonCloseableIterator(status), physical,
                  Optional.empty())
                .map[ColumnarBatch](_.getData)
              val logical = Scan.transformPhysicalData(engine, scanState, scanFile, data)
              try logical.asScala.foreach { b =>
                  val rows = b.getRows
                  try rows.asScala.foreach(r => out += f(r))
                  finally rows.close()
                }
              finally logical.close()
            }
          }
        finally fileRows.close()
      }
    finally scanFiles.close()
    out.toSeq
  }

  /**
   * `f` of every scan file of `snapshot` matching `filter` (its add action, partition values and
   * status; see [[InternalScanFileUtils]]), no data read.
   */
  def scanFiles[T](engine: Engine, snapshot: Snapshot, filter: Option[Predicate])(f: Row => T): Seq[T] = {
    val builder = snapshot.getScanBuilder
    val scanFiles = filter.fold(builder)(builder.withFilter).build().getScanFiles(engine)
    val out = ArrayBuffer.empty[T]
    try scanFiles.asScala.foreach { fileBatch =>
        val fileRows = fileBatch.getRows
        try fileRows.asScala.foreach(scanFile => out += f(scanFile))
        finally fileRows.close()
      }
    finally scanFiles.close()
    out.toSeq
  }

  /**
   * The remove action of a scan file of [[scanFiles]] (its add action's path, partition values and
   * size; Kernel stamps the deletion time) and the file's bytes: what a retention step commits.
   */
  def removeAction(scanFile: Row): (Row, Long) = {
    val add = new AddFile(scanFile.getStruct(InternalScanFileUtils.ADD_FILE_ORDINAL))
    (SingleAction.createRemoveFileSingleAction(add.toRemoveFileRow(true, Optional.empty())),
      InternalScanFileUtils.getAddFileStatus(scanFile).getSize)
  }

  /** Accessors by column name for a scanned row; null for null. */
  final class Named(r: Row) {
    private val s = r.getSchema
    private def at(name: String): Int = s.indexOf(name)
    def int(name: String): Int = r.getInt(at(name))
    def long(name: String): Long = r.getLong(at(name))
    def longOrNull(name: String): java.lang.Long = {
      val i = at(name); if (r.isNullAt(i)) null else java.lang.Long.valueOf(r.getLong(i))
    }
    def binary(name: String): Array[Byte] = { val i = at(name); if (r.isNullAt(i)) null else r.getBinary(i) }
    def string(name: String): String = { val i = at(name); if (r.isNullAt(i)) null else r.getString(i) }
  }
}
