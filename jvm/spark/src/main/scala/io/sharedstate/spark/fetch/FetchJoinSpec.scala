package io.sharedstate.spark.fetch

import io.sharedstate.spark.cluster.{Incarnations, StateClient}
import io.sharedstate.spark.config.Intervals
import io.sharedstate.spark.rows.StateSchemas

import io.sharedstate.core.{Key, SharedStateException, StateSpec}
import io.sharedstate.core.fetch.{FetchRequest, ReadMode}
import io.sharedstate.core.partial.LocalFetch
import io.sharedstate.core.row.ValueType
import org.apache.spark.TaskContext
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
    incarnation: Long,
    local: Boolean) {

  /**
   * The fetch of `key` at `t`; in local scope it reads the instance of the running task's partition
   * (a partial State's instance written by the writer task of the same partition index).
   */
  def request(key: Key, t: Long): FetchRequest = {
    val r = rule.request(key, t, mode, valueType)
    if (!local) r
    else {
      val task = TaskContext.get()
      if (task == null) throw new SharedStateException(
        s"Fetch join with State '$stateName': scope 'local' reads the instance of the fetching task's partition, " +
          "and this fetch runs outside a Spark task.")
      r.copy(rule = LocalFetch(r.rule, task.partitionId()))
    }
  }

  /** Fails when the State was dropped or created again since the join was planned. */
  def checkIncarnation(client: StateClient): Unit =
    Incarnations.check(stateName, incarnation, client.incarnation, "fetch join")

  def keySchema: StructType = StructType(keyOrdinals.map(eventSchema(_)))

  def outputSchema: StructType = StructType(eventSchema.fields ++ rule.addedColumns(schemas))
}

private[sharedstate] object FetchJoinSpec {
  val Modes = Seq("committed", "uncommitted")
  val Hows = Seq("left", "inner")
  val Scopes = Seq("global", "local")

  def apply(eventSchema: StructType, stateName: String, keys: Seq[String], time: String, rule: String,
      mode: String, how: String, staleness: String, window: String, scope: String = "global"): FetchJoinSpec = {
    val client = StateClient.of(stateName)
    val spec = client.spec
    val schemas = StateSchemas.of(spec)
    oneOf("mode", mode, Modes)
    oneOf("how", how, Hows)
    oneOf("scope", scope, Scopes)
    val local = scope.toLowerCase == "local"
    if (local && !spec.isPartial) throw new SharedStateException(
      s"Fetch join: scope 'local' reads one instance of a partial State, and State '$stateName' is not partial " +
        "(create it with partial=<merge>); use scope 'global'.")
    if (local && spec.instances != StateSpec.TaskInstances) throw new SharedStateException(
      s"Fetch join: scope 'local' reads the instance of the fetching task's partition, and State '$stateName' keeps " +
        s"one instance per writer query (instances='${spec.instances}'); use scope 'global'.")
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
    FetchJoinSpec(
      stateName,
      schemas,
      spec.valueType,
      eventSchema,
      keyOrdinals,
      timeOrdinal,
      how.toLowerCase == "inner",
      readMode(mode, staleness),
      fetchRule,
      client.incarnation,
      local
    )
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
