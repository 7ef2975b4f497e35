package io.sharedstate.spark

import io.sharedstate.spark.cluster.{Coordinator, Incarnations}
import io.sharedstate.spark.config.{ReadOptions, UpdateOptions}
import io.sharedstate.spark.rows.StateSchemas
import io.sharedstate.spark.write.{BulkLoadWrite, UpdateMetrics, UpdateStreamingWrite}

import io.sharedstate.core.{EventTime, StateSpec}
import java.util
import org.apache.spark.sql.connector.catalog.{SupportsRead, SupportsWrite, TableCapability}
import org.apache.spark.sql.connector.metric.CustomMetric
import org.apache.spark.sql.connector.read.ScanBuilder
import org.apache.spark.sql.connector.read.streaming.ReportsSinkMetrics
import org.apache.spark.sql.connector.write.{BatchWrite, LogicalWriteInfo, Write, WriteBuilder}
import org.apache.spark.sql.connector.write.streaming.StreamingWrite
import org.apache.spark.sql.types.StructType
import org.apache.spark.sql.util.CaseInsensitiveStringMap
import scala.jdk.CollectionConverters._

/**
 * A State seen as a table: streaming writes apply updates, batch writes bulk-load it; batch reads
 * give the State as of a time (`asOf`), or its rejected and late updates (`table` = `rejected`).
 */
final case class SharedStateTable(options: CaseInsensitiveStringMap)
    extends SupportsWrite with SupportsRead with ReportsSinkMetrics {

  private val stateName = UpdateOptions.stateName(options)
  // Resolved without opening a durable State: a write opens it as owner, a read read-only (a read never
  // takes the root's lease). An unknown name fails here, when the query is defined.
  private val definition: StateSpec = Coordinator.get.specOf(stateName)
  private val schemas = StateSchemas.of(definition)
  @volatile private var writerId: Option[String] = None
  private var writeIncarnation = -1L // the State's creation this table first wrote to

  override def name(): String = s"sharedstate.$stateName"

  /** The definition of the State this table is. */
  def spec: StateSpec = definition

  override def toString: String = s"sharedstate[$stateName]"

  override def schema(): StructType = ReadOptions.parse(options, schemas).schema

  override def capabilities(): util.Set[TableCapability] = Set(
    TableCapability.STREAMING_WRITE,
    TableCapability.BATCH_WRITE,
    TableCapability.BATCH_READ,
    TableCapability.MICRO_BATCH_READ,
    TableCapability.CONTINUOUS_READ,
    TableCapability.ACCEPT_ANY_SCHEMA
  ).asJava

  override def newWriteBuilder(info: LogicalWriteInfo): WriteBuilder = {
    val state = Coordinator.get.state(stateName)
    // Spark asks for a write per micro-batch of the query: each must still be the State it started with.
    val planned = synchronized {
      if (writeIncarnation < 0) writeIncarnation = state.incarnation
      writeIncarnation
    }
    Incarnations.check(stateName, planned, state.incarnation, "writer")
    val parsed = UpdateOptions.parse(info.options(), info.schema(), state.spec).copy(incarnation = planned)
    val writer = info.queryId()
    writerId = Some(writer)
    new WriteBuilder {
      override def build(): Write = new Write {
        override def toStreaming: StreamingWrite = new UpdateStreamingWrite(parsed, writer)
        override def toBatch: BatchWrite = new BulkLoadWrite(parsed)
        override def supportedCustomMetrics(): Array[CustomMetric] = UpdateMetrics.supported
      }
    }
  }

  override def newScanBuilder(scanOptions: CaseInsensitiveStringMap): ScanBuilder = {
    ReadOptions.checkKnown(scanOptions)
    new StateScanBuilder(Coordinator.get.stateForRead(stateName), schemas, ReadOptions.parse(scanOptions, schemas))
  }

  /** Driver-side numbers for the query's progress (sink metrics): known only once an epoch commits. */
  override def metrics(): util.Map[String, String] = {
    val m = Coordinator.get.state(stateName).metrics
    val own = writerId.flatMap(w => m.writerCounts.get(w))
    (Map(
      "updateProgress" -> EventTime.show(m.updateProgress),
      "updatesApplied" -> m.updatesApplied.toString,
      "updatesWaiting" -> m.updatesStaged.toString,
      "updatesLate" -> m.updatesRejected.toString,
      "fetchProgress" -> EventTime.show(m.fetchProgress),
      "pendingFetches" -> m.pendingFetches.toString,
      "pairsCompacted" -> m.pairsCompacted.toString,
      "stateKeys" -> m.keys.toString,
      "stateBytes" -> m.bytesHeld.toString
    ) ++
      own.map { case (accepted, rejected) =>
        Map("updatesAccepted" -> accepted.toString, "updatesRejected" -> rejected.toString)
      }.getOrElse(Map.empty)).asJava
  }
}
