package io.sharedstate.core.embedded

import io.sharedstate.core.{SharedStateException, StateRegistry, StateSpec}

/** The in-process engine: a State registry of its own, reached from Python through JPype. */
object EmbeddedEngine {
  val registry = new StateRegistry
  val Writer = "embedded"

  /**
   * Creates (or opens the identical existing) State. `fetchRules` is comma-separated; empty means all
   * built-in fetch rules.
   */
  def create(name: String, keySchema: String, valueSchema: String, partitions: Int, rule: String,
      compaction: String, lateness: String, memoryLimitBytes: Long, fetchRules: String): EmbeddedState =
    create(name, keySchema, valueSchema, partitions, rule, compaction, lateness, memoryLimitBytes, fetchRules, "",
      Writer)

  /**
   * The same for a partial State (`partial` a merge; "" = not partial): each embedded writer (named
   * `writer`) updates its own instance, as a writer query does on Spark (instances `query`).
   */
  def create(name: String, keySchema: String, valueSchema: String, partitions: Int, rule: String,
      compaction: String, lateness: String, memoryLimitBytes: Long, fetchRules: String, partial: String,
      writer: String): EmbeddedState = {
    val base = StateSpec(name, keySchema.trim, valueSchema.trim, partitions, rule.trim)
    val rules = Option(fetchRules).map(_.split(",").map(_.trim).filter(_.nonEmpty).toSeq).filter(_.nonEmpty)
    val isPartial = partial != null && partial.trim.nonEmpty
    val spec = base.copy(
      compaction = compaction,
      lateness = lateness,
      memoryLimitBytes = memoryLimitBytes,
      fetchRules = rules.getOrElse(base.fetchRules),
      partial = if (isPartial) partial.trim else "",
      instances = if (isPartial) StateSpec.QueryInstances else StateSpec.TaskInstances
    )
    new EmbeddedState(registry.create(spec), writer)
  }

  def open(name: String): EmbeddedState = open(name, Writer)

  /** The State `name` written by `writer`: on a partial State, another writer is another instance. */
  def open(name: String, writer: String): EmbeddedState = new EmbeddedState(registry.get(name), writer)

  def drop(name: String): Boolean = registry.drop(name)

  def names: Array[String] = registry.names.toArray

  /** For Python: raises the engine's own error type with a message, to test error mapping. */
  def fail(message: String): Nothing = throw new SharedStateException(message)
}
