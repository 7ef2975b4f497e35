package io.sharedstate.spark.durable

import io.delta.kernel.{Operation, Scan, Snapshot, Table, Transaction}
import io.delta.kernel.data.{ColumnarBatch, FilteredColumnarBatch, Row}
import io.delta.kernel.engine.Engine
import io.delta.kernel.exceptions.TableNotFoundException
import io.delta.kernel.expressions.{Literal, Predicate}
import io.delta.kernel.internal.InternalScanFileUtils
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
  def writeFiles(engine: Engine, txn: Transaction, partitionValues: Map[String, Literal], physical: StructType,
      columns: IndexedSeq[Array[_ <: AnyRef]], rows: Int): Seq[Row] = {
    val txnState = txn.getTransactionState(engine)
    appendActions(engine, txnState, partitionValues,
      writeParquet(engine, txnState, partitionValues, physical, columns, rows))
  }

  /** Writes the rows as Parquet files of the partition `partitionValues`, not yet part of the table (see [[appendActions]]). */
  def writeParquet(engine: Engine, txnState: Row, partitionValues: Map[String, Literal], physical: StructType,
      columns: IndexedSeq[Array[_ <: AnyRef]], rows: Int): Seq[DataFileStatus] = {
    val context = Transaction.getWriteContext(engine, txnState, partitionValues.asJava)
    val batch = new FilteredColumnarBatch(new ColumnsBatch(physical, columns, rows), Optional.empty())
    val written = engine.getParquetHandler.writeParquetFiles(context.getTargetDirectory,
      Utils.singletonCloseableIterator(batch), java.util.List.of())
    try written.asScala.toList
    finally written.close()
  }

  /** The add actions of files [[writeParquet]] wrote, for the transaction whose state is `txnState`. */
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
   * `conf` with Parquet's zstd codec for the files the durable tables write (unless the session sets
   * `parquet.compression` itself, e.g. `spark.hadoop.parquet.compression`). Delta Kernel's default
   * Parquet writer reads `parquet.compression` from the engine's Hadoop conf (uncompressed without
   * it); each file's footer names its codec, so readers take old uncompressed files as they are.
   */
  def compressed(conf: Configuration): Configuration = {
    val c = new Configuration(conf)
    c.setIfUnset(CompressionKey, DefaultCompression)
    c
  }

  val CompressionKey = "parquet.compression"
  val DefaultCompression = "ZSTD"

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
