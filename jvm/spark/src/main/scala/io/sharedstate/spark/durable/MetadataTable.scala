package io.sharedstate.spark.durable

import com.fasterxml.jackson.databind.ObjectMapper
import io.delta.kernel.{Operation, Table}
import io.delta.kernel.data.Row
import io.delta.kernel.exceptions.TableNotFoundException
import io.delta.kernel.types.{IntegerType, LongType, StringType, StructField, StructType}
import io.sharedstate.core.{SharedStateException, StateSpec}
import org.apache.hadoop.conf.Configuration
import scala.jdk.CollectionConverters._

/**
 * The metadata table of a State, `<root>/<state>/metadata`: one row with the State's definition
 * (as JSON), the format version and when it was created. A second application reads the definition
 * from it to open the State. Written once, at creation, with Delta Kernel.
 */
private[sharedstate] object MetadataTable {
  val FormatVersion = 1
  private val json = new ObjectMapper()

  val schema: StructType = new StructType(Seq(
      new StructField("state", StringType.STRING, false),
      new StructField("spec", StringType.STRING, false),
      new StructField("format_version", IntegerType.INTEGER, false),
      new StructField("created_micros", LongType.LONG, false)
    ).asJava)

  def exists(path: String, conf: Configuration): Boolean = DeltaChangelog.exists(path, conf)

  /** Creates the table with `spec` in one commit (the table and its row appear together). */
  def create(path: String, spec: StateSpec, conf: Configuration): Unit = {
    val engine = KernelTables.engine(conf)
    val txn =
      Table.forPath(engine, path).createTransactionBuilder(engine, KernelTables.EngineInfo, Operation.CREATE_TABLE)
        .withSchema(engine, schema).build(engine)
    val columns =
      IndexedSeq[Array[_ <: AnyRef]](Array(spec.name), Array(toJson(spec)), Array(Integer.valueOf(FormatVersion)),
        Array(java.lang.Long.valueOf(System.currentTimeMillis() * 1000L)))
    KernelTables.commit(engine, txn, KernelTables.writeFiles(engine, conf, txn, Map.empty, schema, columns, 1))
  }

  /** The definition stored at `path`. */
  def read(path: String, conf: Configuration): StateSpec = {
    val engine = KernelTables.engine(conf)
    val snapshot =
      try Table.forPath(engine, path).getLatestSnapshot(engine)
      catch {
        case _: TableNotFoundException => throw new SharedStateException(s"No State metadata table at $path.")
      }
    KernelTables.scan(engine, snapshot, None, schema)(readRow) match {
      case Seq(spec) => spec
      case other => throw new SharedStateException(
          s"The State metadata table at $path holds ${other.size} definitions; expected one.")
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
      "compactionBatch" -> spec.compactionBatch,
      "partial" -> spec.partial,
      "instances" -> spec.instances
    ).asJava)

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
      compactionBatch = n.get("compactionBatch").asInt,
      // Metadata written before partial States has neither field: a plain State.
      partial = Option(n.get("partial")).map(_.asText).getOrElse(""),
      instances = Option(n.get("instances")).map(_.asText).getOrElse(StateSpec.TaskInstances)
    )
  }
}
