package io.sharedstate.spark.durable

import com.fasterxml.jackson.databind.ObjectMapper
import io.delta.kernel.{Operation, Table, Transaction}
import io.delta.kernel.data.{ColumnarBatch, FilteredColumnarBatch, Row}
import io.delta.kernel.defaults.engine.DefaultEngine
import io.delta.kernel.exceptions.TableNotFoundException
import io.delta.kernel.internal.InternalScanFileUtils
import io.delta.kernel.internal.util.Utils
import io.delta.kernel.types.{IntegerType, LongType, StringType, StructField, StructType}
import io.delta.kernel.utils.CloseableIterable
import io.sharedstate.core.{SharedStateException, StateSpec}
import java.util.Optional
import org.apache.hadoop.conf.Configuration
import scala.jdk.CollectionConverters._

/**
 * The metadata table of a State, `<root>/<state>/metadata`: one row with the State's definition
 * (as JSON), the format version and when it was created. A second application reads the definition
 * from it to open the State. Written once, at creation, with Delta Kernel.
 */
object MetadataTable {
  val FormatVersion = 1
  private val json = new ObjectMapper()

  val schema: StructType = new StructType(Seq(
    new StructField("state", StringType.STRING, false),
    new StructField("spec", StringType.STRING, false),
    new StructField("format_version", IntegerType.INTEGER, false),
    new StructField("created_micros", LongType.LONG, false)).asJava)

  def exists(path: String, conf: Configuration): Boolean = DeltaChangelog.exists(path, conf)

  /** Creates the table with `spec` in one commit (the table and its row appear together). */
  def create(path: String, spec: StateSpec, conf: Configuration): Unit = {
    val engine = DefaultEngine.create(conf)
    val txn = Table.forPath(engine, path).createTransactionBuilder(engine, DeltaChangelog.EngineInfo, Operation.CREATE_TABLE)
      .withSchema(engine, schema).build(engine)
    val txnState = txn.getTransactionState(engine)
    val columns = IndexedSeq[Array[_ <: AnyRef]](Array(spec.name), Array(toJson(spec)), Array(Integer.valueOf(FormatVersion)),
      Array(java.lang.Long.valueOf(System.currentTimeMillis() * 1000L)))
    val batch = new FilteredColumnarBatch(new ColumnsBatch(schema, columns, 1), Optional.empty())
    val context = Transaction.getWriteContext(engine, txnState, java.util.Map.of())
    val written = engine.getParquetHandler.writeParquetFiles(context.getTargetDirectory,
      Utils.singletonCloseableIterator(batch), java.util.List.of())
    val actions = Transaction.generateAppendActions(engine, txnState, written, context)
    txn.commit(engine, CloseableIterable.inMemoryIterable(actions))
  }

  /** The definition stored at `path`. */
  def read(path: String, conf: Configuration): StateSpec = {
    val engine = DefaultEngine.create(conf)
    val snapshot = try Table.forPath(engine, path).getLatestSnapshot(engine) catch {
      case _: TableNotFoundException => throw new SharedStateException(s"No State metadata table at $path.")
    }
    val scan = snapshot.getScanBuilder.build()
    val scanState = scan.getScanState(engine)
    val specs = scan.getScanFiles(engine).asScala.flatMap(_.getRows.asScala).flatMap { scanFile =>
      val physical = engine.getParquetHandler.readParquetFiles(
        Utils.singletonCloseableIterator(InternalScanFileUtils.getAddFileStatus(scanFile)), schema, Optional.empty())
        .map[ColumnarBatch](_.getData)
      io.delta.kernel.Scan.transformPhysicalData(engine, scanState, scanFile, physical).asScala
        .flatMap(_.getRows.asScala).map(readRow).toList
    }.toList
    specs match {
      case Seq(spec) => spec
      case other => throw new SharedStateException(s"The State metadata table at $path holds ${other.size} definitions; expected one.")
    }
  }

  private def readRow(r: Row): StateSpec = {
    val version = r.getInt(schema.indexOf("format_version"))
    if (version != FormatVersion) throw new SharedStateException(
      s"The State metadata at format version $version is not supported by this sharedstate (format $FormatVersion).")
    fromJson(r.getString(schema.indexOf("spec")))
  }

  def toJson(spec: StateSpec): String = json.writeValueAsString(Map[String, Any](
    "name" -> spec.name,
    "keySchema" -> spec.keySchema,
    "valueSchema" -> spec.valueSchema,
    "partitions" -> spec.partitions,
    "updateRule" -> spec.updateRule,
    "fetchRules" -> spec.fetchRules.asJava,
    "compaction" -> spec.compaction,
    "lateness" -> spec.lateness,
    "memoryLimitBytes" -> spec.memoryLimitBytes,
    "compactionIntervalMs" -> spec.compactionIntervalMs,
    "compactionBatch" -> spec.compactionBatch).asJava)

  def fromJson(text: String): StateSpec = {
    val n = json.readTree(text)
    StateSpec(
      name = n.get("name").asText,
      keySchema = n.get("keySchema").asText,
      valueSchema = n.get("valueSchema").asText,
      partitions = n.get("partitions").asInt,
      updateRule = n.get("updateRule").asText,
      fetchRules = n.get("fetchRules").elements.asScala.map(_.asText).toSeq,
      compaction = n.get("compaction").asText,
      lateness = n.get("lateness").asText,
      memoryLimitBytes = n.get("memoryLimitBytes").asLong,
      compactionIntervalMs = n.get("compactionIntervalMs").asLong,
      compactionBatch = n.get("compactionBatch").asInt)
  }
}
