package io.sharedstate.spark

import io.sharedstate.core.SharedStateException
import io.sharedstate.core.fetch.ReadMode
import io.sharedstate.spark.distributed.StateClient
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.types.{ArrayType, StructField, StructType, TimestampType}

/** A validated fetch join: which State, how events bind to it, and the output schema. */
final case class FetchJoinSpec(
    stateName: String,
    schemas: StateSchemas,
    eventSchema: StructType,
    keyOrdinals: Array[Int],
    timeOrdinal: Int,
    inner: Boolean,
    mode: ReadMode,
    pollIntervalMs: Long) {

  def keySchema: StructType = StructType(keyOrdinals.map(eventSchema(_)))

  def outputSchema: StructType = StructType(eventSchema.fields ++
    schemas.value.fields.map(_.copy(nullable = true)) :+ StructField(schemas.timeColumn, TimestampType, nullable = true))

  /** Operator state of one key: the events that wait for U to pass them. */
  def waitingSchema: StructType = StructType(Seq(StructField("waiting", ArrayType(eventSchema, containsNull = false))))
}

object FetchJoinSpec {
  val Rules = Seq("latest")
  val Modes = Seq("committed", "uncommitted")
  val Hows = Seq("left", "inner")

  def apply(eventSchema: StructType, stateName: String, keys: Seq[String], time: String, rule: String,
      mode: String, how: String, pollIntervalMs: Long, staleness: String = null): FetchJoinSpec = {
    val schemas = StateSchemas.of(StateClient.of(stateName).spec)
    oneOf("rule", rule, Rules)
    oneOf("mode", mode, Modes)
    oneOf("how", how, Hows)
    if (pollIntervalMs < 1) throw new SharedStateException(s"pollInterval must be at least 1 ms, got $pollIntervalMs.")
    val keyOrdinals = StateSchemas.bindColumns(eventSchema, keys, schemas.key, "key", stateName)
    val timeOrdinal = StateSchemas.checkTimestamp(eventSchema, time, "time")
    val added = schemas.value.fieldNames :+ schemas.timeColumn
    val caseSensitive = SparkSession.getActiveSession.exists(_.sessionState.conf.caseSensitiveAnalysis)
    val norm: String => String = if (caseSensitive) identity else _.toLowerCase
    val clashes = added.filter(a => eventSchema.fieldNames.exists(f => norm(f) == norm(a)))
    if (clashes.nonEmpty) {
      throw new SharedStateException(s"Fetch join with State '$stateName' would add column(s) " +
        s"${clashes.mkString(", ")}, which the events already have. Rename or drop them in the events first.")
    }
    FetchJoinSpec(stateName, schemas, eventSchema, keyOrdinals, timeOrdinal, how.toLowerCase == "inner",
      readMode(mode, staleness), pollIntervalMs)
  }

  /** committed, or uncommitted with a staleness interval (SSP: answered once t - staleness < U). */
  private def readMode(mode: String, staleness: String): ReadMode = mode.toLowerCase match {
    case "uncommitted" =>
      if (staleness == null) throw new SharedStateException(
        "Fetch join: mode 'uncommitted' needs a staleness, e.g. staleness='10 seconds' (0 seconds answers at t < U).")
      ReadMode.Uncommitted(Intervals.parseMicros("staleness", staleness))
    case _ =>
      if (staleness != null) throw new SharedStateException(
        s"Fetch join: staleness applies to mode 'uncommitted' only; mode '$mode' always waits until t < U.")
      ReadMode.Committed
  }

  private def oneOf(option: String, value: String, allowed: Seq[String]): Unit =
    if (value == null || !allowed.contains(value.toLowerCase)) {
      throw new SharedStateException(s"Fetch join: $option '$value' is not supported; supported: ${allowed.mkString(", ")}.")
    }
}
