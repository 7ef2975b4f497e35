package io.sharedstate.core

/**
 * What defines a State. Schemas are DDL strings ("ad_id STRING"): the engine stores keys and values
 * as opaque binary rows, and the Spark side owns their encoding.
 */
final case class StateSpec(
    name: String,
    keySchema: String,
    valueSchema: String,
    partitions: Int,
    updateRule: String) {

  StateSpec.validateName(name)
  if (partitions < 1 || partitions > StateSpec.MaxPartitions) {
    throw new SharedStateException(
      s"State '$name': partitions must be between 1 and ${StateSpec.MaxPartitions}, got $partitions.")
  }
  UpdateRule.byName(updateRule)
}

object StateSpec {
  val MaxPartitions = 4096
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
