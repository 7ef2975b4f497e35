package io.sharedstate.spark.fetch

import io.sharedstate.spark.cluster.{Incarnations, StateClient}
import io.sharedstate.spark.config.Intervals
import io.sharedstate.spark.rows.StateSchemas

import io.sharedstate.core.SharedStateException
import io.sharedstate.core.fetch.ReadMode
import io.sharedstate.core.row.ValueType
import org.apache.spark.sql.SparkSession
import org.apache.spark.sql.types.StructType

/** A validated fetch join: which State, how events bind to it, what it reads, and the output schema. */
private[sharedstate] final case class FetchJoinSpec(
    stateName: String,
    schemas: StateSchemas,
    valueType: ValueType,
    eventSchema: StructType,
    keyOrdinals: Array[Int],
    timeOrdinal: Int,
    inner: Boolean,
    mode: ReadMode,
    rule: FetchJoinRule,
    incarnation: Long) {

  /** Fails when the State was dropped or created again since the join was planned. */
  def checkIncarnation(client: StateClient): Unit =
    Incarnations.check(stateName, incarnation, client.incarnation, "fetch join")

  def keySchema: StructType = StructType(keyOrdinals.map(eventSchema(_)))

  def outputSchema: StructType = StructType(eventSchema.fields ++ rule.addedColumns(schemas))
}

private[sharedstate] object FetchJoinSpec {
  val Modes = Seq("committed", "uncommitted")
  val Hows = Seq("left", "inner")

  def apply(eventSchema: StructType, stateName: String, keys: Seq[String], time: String, rule: String,
      mode: String, how: String, staleness: String, window: String): FetchJoinSpec = {
    val client = StateClient.of(stateName)
    val spec = client.spec
    val schemas = StateSchemas.of(spec)
    oneOf("mode", mode, Modes)
    oneOf("how", how, Hows)
    val fetchRule = FetchJoinRule.parse(rule, window, schemas, spec.valueType, spec.fetchRules)
    val keyOrdinals = StateSchemas.bindColumns(eventSchema, keys, schemas.key, "key", stateName)
    val timeOrdinal = StateSchemas.checkTimestamp(eventSchema, time, "time")
    val added = fetchRule.addedColumns(schemas).map(_.name)
    val caseSensitive = SparkSession.getActiveSession.exists(_.sessionState.conf.caseSensitiveAnalysis)
    val norm: String => String = if (caseSensitive) identity else _.toLowerCase
    val clashes = added.filter(a => eventSchema.fieldNames.exists(f => norm(f) == norm(a)))
    if (clashes.nonEmpty) {
      throw new SharedStateException(s"Fetch join with State '$stateName' would add column(s) " +
        s"${clashes.mkString(", ")}, which the events already have. Rename or drop them in the events first.")
    }
    FetchJoinSpec(stateName, schemas, spec.valueType, eventSchema, keyOrdinals, timeOrdinal,
      how.toLowerCase == "inner", readMode(mode, staleness), fetchRule, client.incarnation)
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
      throw new SharedStateException(
        s"Fetch join: $option '$value' is not supported; supported: ${allowed.mkString(", ")}.")
    }
}
