package io.sharedstate.spark

import com.fasterxml.jackson.databind.ObjectMapper
import io.sharedstate.spark.config.StateOptions
import io.sharedstate.core.{EventTime, StateMetrics}
import org.apache.spark.sql.{DataFrame, SparkSession}
import scala.jdk.CollectionConverters._

/**
 * Python's entry (through py4j). Python's `sharedstate.State` holds the [[StateHandle]] this returns
 * and calls it directly, as Delta's Python `DeltaTable` holds its Scala twin; this object only adapts
 * what py4j cannot pass as it is: Scala default and Option arguments, a key list as one string, and
 * structured results (progress, descriptions, snapshot rounds) as JSON, so Python needs no knowledge
 * of Scala types.
 */
object SharedStateApi {
  private val json = new ObjectMapper()

  /**
   * [[SharedState.create]] with every option given (null: the default); `fetchRules` comma-separated;
   * `root` null: `spark.sharedstate.root`, or in memory when that is unset.
   */
  def create(spark: SparkSession, name: String, key: String, value: String, partitions: Int, rule: String,
      root: String, fetchRules: String, compaction: String, latePolicy: String, memoryLimit: String,
      sweepInterval: String): StateHandle = {
    val rules = Option(fetchRules).map(_.split(",").map(_.trim).filter(_.nonEmpty).toSeq)
    val defaults = StateOptions()
    SharedState.create(
      spark,
      name,
      key,
      value,
      rule,
      partitions,
      root,
      StateOptions(
        rules.getOrElse(defaults.fetchRules),
        Option(compaction).getOrElse(defaults.compaction),
        Option(latePolicy).getOrElse(defaults.latePolicy),
        memoryLimit,
        Option(sweepInterval).getOrElse(defaults.sweepInterval)
      )
    )
  }

  /** [[SharedState.get]]. */
  def get(spark: SparkSession, name: String): StateHandle = SharedState.get(spark, name)

  /** [[SharedState.open]]; `readOnly` null: own the State unless another application does. */
  def open(spark: SparkSession, name: String, readOnly: java.lang.Boolean, root: String): StateHandle =
    SharedState.open(spark, name, Option(readOnly).map(_.booleanValue), root)

  def names(): Array[String] = SharedState.names.toArray

  /** [[SharedState.updater]]; `value` and `lateness` null: the sink's defaults; `options` the others. */
  def updater(spark: SparkSession, name: String, key: String, time: String, value: String, lateness: String,
      options: java.util.Map[String, String]): org.apache.spark.sql.ForeachWriter[org.apache.spark.sql.Row] =
    SharedState.updater(spark, name, key, time, value, lateness, options.asScala.toMap)

  /** [[StateHandle.fetchJoin]] with every argument given, the key columns comma-separated. */
  def fetchJoin(state: StateHandle, events: DataFrame, keys: String, time: String, rule: String, mode: String,
      how: String, staleness: String, window: String, continuous: Boolean, lateness: String): DataFrame =
    state.fetchJoin(events, keys.split(",").map(_.trim).filter(_.nonEmpty).toSeq, time, rule, mode, how, staleness,
      window, continuous, lateness)

  /** The State's definition and placement. */
  def describe(state: StateHandle): String = {
    val spec = state.spec
    json.writeValueAsString(Map[String, Any](
        "name" -> spec.name,
        "key" -> spec.keySchema,
        "value" -> spec.valueSchema,
        "partitions" -> spec.partitions,
        "rule" -> spec.updateRule,
        "fetch_rules" -> spec.fetchRules.asJava,
        "compaction" -> spec.compaction,
        "late_policy" -> spec.lateness,
        "memory_limit_bytes" -> spec.memoryLimitBytes,
        "sweep_interval_ms" -> spec.compactionIntervalMs,
        "time_column" -> state.timeColumn,
        "hosts" -> state.hosts.asJava,
        "root" -> state.root.orNull,
        "moves" -> state.moves.map(m =>
          Map[String, Any]("partitions" -> m.partitions.asJava, "from" -> m.from, "to" -> m.to,
            "millis" -> m.millis).asJava).asJava,
        "read_only" -> state.readOnly.orNull
      ).asJava)
  }

  /** [[StateHandle.progress]]: times in microseconds; null stands for -/+ infinity (see `update_is`). */
  def progress(state: StateHandle): String = {
    val m: StateMetrics = state.progress
    json.writeValueAsString(Map[String, Any](
        "state" -> m.name,
        "update" -> micros(m.updateProgress),
        "update_is" -> infinity(m.updateProgress),
        "writers" -> m.writers.map { case (w, p) => w -> micros(p) }.asJava,
        "fetch" -> micros(m.fetchProgress),
        "fetch_is" -> infinity(m.fetchProgress),
        "readers" -> m.readers.map { case (r, p) => r -> micros(p) }.asJava,
        "pairs" -> m.pairs,
        "pairs_compacted" -> m.pairsCompacted,
        "pending_fetches" -> m.pendingFetches,
        "keys" -> m.keys,
        "bytes" -> m.bytesHeld,
        "updates_applied" -> m.updatesApplied,
        "updates_waiting" -> m.updatesStaged,
        "updates_rejected" -> m.updatesRejected,
        "rejected_dropped" -> m.rejectedDropped
      ).asJava)
  }

  /** [[StateHandle.writers]]: times in microseconds, null for -/+ infinity (see `progress_is`). */
  def writers(state: StateHandle): String = json.writeValueAsString(state.writers.map { w =>
    Map[String, Any]("writer" -> w.writer, "progress" -> micros(w.progress), "progress_is" -> infinity(w.progress),
      "last_epoch" -> w.lastEpoch, "status" -> w.status).asJava
  }.asJava)

  /** [[StateHandle.readers]]: F per reader in microseconds, null for -/+ infinity. */
  def readers(state: StateHandle): String =
    json.writeValueAsString(state.readers.map { case (r, p) => r -> micros(p) }.asJava)

  /** [[StateHandle.snapshot]]: what the round did. */
  def snapshot(state: StateHandle): String = {
    val r = state.snapshot()
    json.writeValueAsString(Map[String, Any](
        "written" -> r.written,
        "unchanged" -> r.unchanged,
        "snapshots_removed" -> r.snapshotsRemoved,
        "changelog_trimmed" -> r.changelogTrimmed,
        "deltas" -> r.deltas,
        "entries" -> r.entries,
        "bytes" -> r.bytes,
        "snapshot_ms" -> r.snapshotMs,
        "retention_ms" -> r.retentionMs
      ).asJava)
  }

  private def micros(t: Long): Any = if (EventTime.isFinite(t)) t else null
  private def infinity(t: Long): String =
    if (t == EventTime.MinusInfinity) "-infinity" else if (t == EventTime.PlusInfinity) "+infinity" else "finite"
}
