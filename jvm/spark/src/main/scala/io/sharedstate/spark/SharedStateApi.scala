package io.sharedstate.spark

import io.sharedstate.spark.cluster.{Coordinator, StateController}
import io.sharedstate.spark.config.SharedStateConf
import io.sharedstate.spark.durable.DurableStates
import io.sharedstate.spark.rows.StateSchemas

import com.fasterxml.jackson.databind.ObjectMapper
import io.sharedstate.core.EventTime
import org.apache.spark.sql.SparkSession
import scala.jdk.CollectionConverters._

/**
 * The State catalogue for Python (through py4j): like [[SharedState]], with descriptions returned
 * as JSON so the Python side needs no knowledge of Scala types.
 */
object SharedStateApi {
  private val json = new ObjectMapper()

  /** Creates a State (or returns the identical existing one) and returns its description. */
  def create(name: String, keySchema: String, valueSchema: String, partitions: Int, rule: String): String =
    create(name, keySchema, valueSchema, partitions, rule, null)

  /** As above, durable under `root` (null: `spark.sharedstate.root`, or in memory when that is unset). */
  def create(
      name: String, keySchema: String, valueSchema: String, partitions: Int, rule: String, root: String): String = {
    SharedState.create(SparkSession.active, name, keySchema, valueSchema, rule, partitions, root)
    get(name)
  }

  def get(name: String): String = describe(Coordinator.get.state(name))

  /**
   * Opens the durable State `name` under `root` (null: `spark.sharedstate.root`). `readOnly` true:
   * read-only, following the application that owns the root; false: this application must own it;
   * null: owns it unless another application does, then read-only. A State already open here is
   * returned as it is.
   */
  def open(name: String, readOnly: java.lang.Boolean, root: String): String = {
    val spark = SparkSession.active
    DurableStates.root(spark, Option(root)) match {
      case Some(r) =>
        Coordinator.get.openDurable(spark, name, r, Option(readOnly).map(_.booleanValue)).getOrElse(
          throw new io.sharedstate.core.SharedStateException(
            s"No State '$name' under $r (no metadata table at $r/$name/metadata)."))
      case None if readOnly != null =>
        throw new io.sharedstate.core.SharedStateException(
          s"State '$name': read_only applies to durable States; give a root (root=...) or set ${SharedStateConf.Root.key}.")
      case None =>
    }
    get(name)
  }

  def drop(name: String): Boolean = Coordinator.get.drop(name)

  /** Takes a snapshot round of a durable State now; what it did, as JSON. */
  def snapshot(name: String): String = {
    val r = DurableStates.snapshot(name)
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

  def list(): Array[String] = Coordinator.get.names.toArray

  /** U, F, per-writer and per-reader progress and sizes. Times are microseconds; null stands for -/+ infinity. */
  def progress(name: String): String = {
    DurableStates.catchUp(name)
    val m = Coordinator.get.state(name).metrics
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
        "updates_rejected" -> m.updatesRejected
      ).asJava)
  }

  private def describe(s: StateController): String = json.writeValueAsString(Map[String, Any](
      "name" -> s.spec.name,
      "key" -> s.spec.keySchema,
      "value" -> s.spec.valueSchema,
      "partitions" -> s.spec.partitions,
      "rule" -> s.spec.updateRule,
      "time_column" -> StateSchemas.of(s.spec).timeColumn,
      "hosts" -> s.owners.map(_.executorId).asJava,
      "root" -> DurableStates.rootOf(s.spec.name).orNull,
      // partitions rebuilt on another executor after theirs was lost (cluster mode, durable States)
      "moves" -> s.moves.map(m =>
        Map[String, Any]("partitions" -> m.partitions.asJava, "from" -> m.from.executorId,
          "to" -> m.to.executorId, "millis" -> m.millis).asJava).asJava,
      "read_only" -> DurableStates.readOnly(s.spec.name).orNull
    ).asJava)

  private def micros(t: Long): Any = if (EventTime.isFinite(t)) t else null
  private def infinity(t: Long): String =
    if (t == EventTime.MinusInfinity) "-infinity" else if (t == EventTime.PlusInfinity) "+infinity" else "finite"
}
