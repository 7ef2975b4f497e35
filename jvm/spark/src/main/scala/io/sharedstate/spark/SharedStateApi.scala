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
      sweepInterval: String): StateHandle =
    create(spark, name, key, value, partitions, rule, root, fetchRules, compaction, latePolicy, memoryLimit,
      sweepInterval, null, null)

  /** [[create]] of a partial State: `partial` the merge, `instances` `task` or `query` (null: the default). */
  def create(spark: SparkSession, name: String, key: String, value: String, partitions: Int, rule: String,
      root: String, fetchRules: String, compaction: String, latePolicy: String, memoryLimit: String,
      sweepInterval: String, partial: String, instances: String): StateHandle = {
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
        Option(sweepInterval).getOrElse(defaults.sweepInterval),
        partial,
        instances
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

  /** [[fetchJoin]] with a scope: `global` (a partial State's instances merged) or `local` (the task's instance). */
  def fetchJoin(state: StateHandle, events: DataFrame, keys: String, time: String, rule: String, mode: String,
      how: String, staleness: String, window: String, continuous: Boolean, lateness: String,
      scope: String): DataFrame =
    state.fetchJoin(events, keys.split(",").map(_.trim).filter(_.nonEmpty).toSeq, time, rule, mode, how, staleness,
      window, continuous, lateness, Option(scope).getOrElse("global"))

  /**
   * [[SharedState.transact]] with the reads and writes as JSON lists: reads `[{"name", "state", "key"}]`,
   * writes `[{"state", "key", "value"}]` (Python's `sharedstate.transact` checks their shape).
   */
  def transact(events: DataFrame, time: String, readsJson: String, condition: String, writesJson: String,
      outcomes: Boolean, lateness: String): DataFrame = {
    def list(text: String, fields: Seq[String]): Seq[Seq[String]] =
      json.readTree(text).elements().asScala.toSeq.map(n => fields.map(f => Option(n.get(f)).map(_.asText).orNull))
    SharedState.transact(
      events,
      time,
      list(readsJson, Seq("name", "state", "key")).map(r => (r(0), r(1), r(2))),
      condition,
      list(writesJson, Seq("state", "key", "value")).map(w => (w(0), w(1), w(2))),
      outcomes,
      lateness
    )
  }

  /**
   * [[SharedState.transactClass]] (the class form) with the reads and writes as JSON lists: reads
   * `[{"name", "state", "key"}]`, writes `[{"state", "key"}]`.
   */
  def transactClass(events: DataFrame, time: String, logic: String, readsJson: String, writesJson: String,
      outcomes: Boolean, lateness: String): DataFrame = {
    def list(text: String, fields: Seq[String]): Seq[Seq[String]] =
      json.readTree(text).elements().asScala.toSeq.map(n => fields.map(f => Option(n.get(f)).map(_.asText).orNull))
    SharedState.transactClass(
      events,
      time,
      logic,
      list(readsJson, Seq("name", "state", "key")).map(r =>
        (r(0), r(1),
          r(2))),
      list(writesJson, Seq("state", "key")).map(w => (w(0), w(1))),
      outcomes,
      lateness
    )
  }

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
        "partial" -> (if (spec.isPartial) spec.partial else null),
        "instances" -> (if (spec.isPartial) spec.instances else null),
        "time_column" -> state.timeColumn,
        "hosts" -> state.hosts.asJava,
        "root" -> state.root.orNull,
        "moves" -> movesJson(state.moves),
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
        "rejected_dropped" -> m.rejectedDropped,
        "moves" -> movesJson(state.moves)
      ).asJava)
  }

  /** [[StateHandle.move]]: what moved, as JSON. */
  def move(state: StateHandle, partition: Int, executor: String): String =
    json.writeValueAsString(movesJson(state.move(partition, executor)))

  /** [[StateHandle.rebalance]]: what moved, as JSON. */
  def rebalance(state: StateHandle): String = json.writeValueAsString(movesJson(state.rebalance()))

  private def movesJson(moves: Seq[PartitionMove]): java.util.List[java.util.Map[String, Any]] =
    moves.map(m =>
      Map[String, Any]("partitions" -> m.partitions.asJava, "from" -> m.from, "to" -> m.to, "millis" -> m.millis,
        "reason" -> m.reason).asJava).asJava

  /** [[StateHandle.writers]]: times in microseconds, null for -/+ infinity (see `progress_is`). */
  def writers(state: StateHandle): String = json.writeValueAsString(state.writers.map { w =>
    Map[String, Any]("writer" -> w.writer, "progress" -> micros(w.progress), "progress_is" -> infinity(w.progress),
      "last_epoch" -> w.lastEpoch, "status" -> w.status).asJava
  }.asJava)

  /** [[StateHandle.readers]]: F per reader in microseconds, null for -/+ infinity. */
  def readers(state: StateHandle): String =
    json.writeValueAsString(state.readers.map { case (r, p) => r -> micros(p) }.asJava)

  /** [[StateHandle.snapshot]]: what the round did. */
  def snapshot(state: StateHandle): String = json.writeValueAsString(round(state.snapshot()))

  /** [[StateHandle.snapshotRounds]]: the newest rounds, oldest first, each as [[snapshot]] gives one. */
  def snapshotRounds(state: StateHandle): String =
    json.writeValueAsString(state.snapshotRounds.map(round).asJava)

  private def round(r: io.sharedstate.spark.durable.SnapshotRound): java.util.Map[String, Any] =
    Map[String, Any](
      "written" -> r.written,
      "unchanged" -> r.unchanged,
      "snapshots_removed" -> r.snapshotsRemoved,
      "changelog_trimmed" -> r.changelogTrimmed,
      "deltas" -> r.deltas,
      "entries" -> r.entries,
      "bytes" -> r.bytes,
      "snapshot_ms" -> r.snapshotMs,
      "retention_ms" -> r.retentionMs,
      "lock_wait_ms" -> r.lockWaitMs,
      "capture_ms" -> r.captureMs,
      "encode_ms" -> r.encodeMs,
      "write_ms" -> r.writeMs,
      "trim_lock_ms" -> r.trimLockMs,
      "trigger" -> r.trigger,
      "started_millis" -> r.startedMillis
    ).asJava

  private def micros(t: Long): Any = if (EventTime.isFinite(t)) t else null
  private def infinity(t: Long): String =
    if (t == EventTime.MinusInfinity) "-infinity" else if (t == EventTime.PlusInfinity) "+infinity" else "finite"
}
