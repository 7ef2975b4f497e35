package io.sharedstate.core

import io.sharedstate.core.compaction.CompactionRule
import io.sharedstate.core.fetch.FetchRule
import io.sharedstate.core.partial.PartialView
import io.sharedstate.core.row.ValueType
import io.sharedstate.core.rules.UpdateRule

/**
 * What defines a State. Schemas are DDL strings ("ad_id STRING"): the engine stores keys and values
 * as binary rows in Spark's UnsafeRow layout; rules that look inside values read them through
 * [[valueType]], parsed from the value DDL.
 *
 * @param fetchRules the fetch rules this State answers (built-in names or "class:<name>")
 * @param compaction `keep_latest`, `none` or "class:<name>"
 * @param lateness what an update below U at commit gets: `reject` (routed to the rejected log and the
 *                 late-updates table) or `fail` (the commit fails, naming the update)
 * @param memoryLimitBytes estimated bytes the State may hold (applied plus staged); 0 = no limit
 * @param compactionIntervalMs period of the background compaction sweep; 0 = lazy compaction only
 * @param compactionBatch entries each partition examines per sweep round
 * @param rejectedLogCap rejected updates the in-memory rejected log keeps (the first ones; later
 *                       ones are only counted, as `rejectedDropped`); 0 keeps none. The counts of
 *                       rejected updates stay exact, and a durable State's rejected table keeps them all.
 * @param partial the merge of a partial State ("" = not partial): `sum`, `min`, `max`, `union`,
 *                "class:<name>" or a provider's "<prefix>:<body>" (see [[PartialMerge]]). Each writer
 *                instance keeps its own value; fetches read the instances merged, or one instance.
 * @param instances what an instance of a partial State is: `task` (the writer task's partition) or
 *                  `query` (the writer query)
 */
final case class StateSpec(
    name: String,
    keySchema: String,
    valueSchema: String,
    partitions: Int,
    updateRule: String,
    fetchRules: Seq[String] = FetchRule.BuiltInNames,
    compaction: String = "keep_latest",
    lateness: String = StateSpec.RejectLate,
    memoryLimitBytes: Long = 0L,
    compactionIntervalMs: Long = 0L,
    compactionBatch: Int = 10000,
    rejectedLogCap: Int = StateSpec.DefaultRejectedLogCap,
    partial: String = "",
    instances: String = StateSpec.TaskInstances) {

  StateSpec.validateName(name)
  if (partitions < 1 || partitions > StateSpec.MaxPartitions) {
    throw new SharedStateException(
      s"State '$name': partitions must be between 1 and ${StateSpec.MaxPartitions}, got $partitions.")
  }

  @transient lazy val valueType: ValueType = ValueType.parse(valueSchema)
  @transient lazy val keyType: ValueType = ValueType.parse(keySchema)

  // Resolving the rules checks them against the value type now, not at the first update.
  UpdateRule.resolve(updateRule, valueType)
  CompactionRule.resolve(compaction, valueType)
  fetchRules.foreach(FetchRule.checkName)
  if (!StateSpec.LatenessPolicies.contains(lateness)) throw new SharedStateException(
    s"State '$name': unknown lateness policy '$lateness'. Supported: ${StateSpec.LatenessPolicies.mkString(", ")}.")
  if (memoryLimitBytes < 0) throw new SharedStateException(
    s"State '$name': memoryLimitBytes must be >= 0 (0 = no limit), got $memoryLimitBytes.")
  if (compactionIntervalMs < 0 || compactionBatch < 1) throw new SharedStateException(
    s"State '$name': compactionIntervalMs must be >= 0 and compactionBatch >= 1, got $compactionIntervalMs and $compactionBatch.")
  if (rejectedLogCap < 0) throw new SharedStateException(
    s"State '$name': rejectedLogCap must be >= 0 (0 = keep no rejected update in memory), got $rejectedLogCap.")
  if (!StateSpec.InstanceKinds.contains(instances)) throw new SharedStateException(
    s"State '$name': instances must be one of ${StateSpec.InstanceKinds.mkString(", ")}, got '$instances'.")

  def isPartial: Boolean = partial != null && partial.trim.nonEmpty

  /** How readers see the instances of a partial State; null when the State is not partial. */
  @transient private[sharedstate] lazy val partialView: PartialView =
    if (isPartial) new PartialView(name, partial, valueType) else null

  if (isPartial) partialView.merge // resolving the merge checks it against the value type now
  keyType
}

object StateSpec {
  val MaxPartitions = 4096
  val DefaultRejectedLogCap = 10000
  val RejectLate = "reject"
  val FailLate = "fail"
  val LatenessPolicies: Seq[String] = Seq(RejectLate, FailLate)
  val TaskInstances = "task"
  val QueryInstances = "query"
  val InstanceKinds: Seq[String] = Seq(TaskInstances, QueryInstances)
  private val NamePattern = "[A-Za-z][A-Za-z0-9_]{0,127}".r

  /** State names become directory and table names, so they are plain identifiers. */
  def validateName(name: String): Unit = {
    if (name == null || !NamePattern.matches(name)) {
      throw new SharedStateException(
        s"Invalid State name '$name': a State name starts with a letter and has only letters, " +
          "digits and '_' (at most 128 characters), so it cannot name a path outside the State root.")
    }
  }
}
