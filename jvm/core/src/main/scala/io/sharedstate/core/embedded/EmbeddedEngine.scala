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
      compaction: String, lateness: String, memoryLimitBytes: Long, fetchRules: String): EmbeddedState = {
    val base = StateSpec(name, keySchema.trim, valueSchema.trim, partitions, rule.trim)
    val rules = Option(fetchRules).map(_.split(",").map(_.trim).filter(_.nonEmpty).toSeq).filter(_.nonEmpty)
    val spec = base.copy(compaction = compaction, lateness = lateness, memoryLimitBytes = memoryLimitBytes,
      fetchRules = rules.getOrElse(base.fetchRules))
    new EmbeddedState(registry.create(spec), Writer)
  }

  def open(name: String): EmbeddedState = new EmbeddedState(registry.get(name), Writer)

  def drop(name: String): Boolean = registry.drop(name)

  def names: Array[String] = registry.names.toArray

  /** For Python: raises the engine's own error type with a message, to test error mapping. */
  def fail(message: String): Nothing = throw new SharedStateException(message)
}
