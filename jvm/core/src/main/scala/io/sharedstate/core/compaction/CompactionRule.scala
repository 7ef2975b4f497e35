package io.sharedstate.core.compaction

import io.sharedstate.core.{SharedStateException, ValueSet}
import io.sharedstate.core.row.ValueType
import io.sharedstate.core.rules.UserRules

/**
 * Drops or merges pairs older than the compaction horizon (min(F, U)): pairs at or after it must be
 * kept as they are, since fetches may still read them. Returns `set` itself when there is nothing to do,
 * so the caller can skip publishing. A user rule implements this trait (constructor taking a
 * [[ValueType]], or none) and is named "class:com.example.MyCompaction".
 */
trait CompactionRule extends Serializable {
  def name: String
  def compact(set: ValueSet, horizon: Long): ValueSet
}

object CompactionRule {

  /** Per key, keep the newest pair older than the horizon and every pair at or after it (Nova's AdCamp rule). */
  object KeepLatest extends CompactionRule {
    val name = "keep_latest"
    def compact(set: ValueSet, horizon: Long): ValueSet =
      // Only when at least two pairs are older than the horizon is there something to drop.
      if (set.size < 2 || set.timeAt(1) >= horizon) set
      else set.dropBefore(set.latestIndex(horizon - 1))
  }

  object KeepAll extends CompactionRule {
    val name = "none"
    def compact(set: ValueSet, horizon: Long): ValueSet = set
  }

  private val builtIn = Map(KeepLatest.name -> KeepLatest, KeepAll.name -> KeepAll)
  val ClassPrefix = "class:"

  def names: Seq[String] = builtIn.keys.toSeq.sorted

  def resolve(name: String, valueType: ValueType): CompactionRule = {
    val trimmed = Option(name).map(_.trim).getOrElse("")
    if (trimmed.regionMatches(true, 0, ClassPrefix, 0, ClassPrefix.length)) {
      UserRules.instantiate[CompactionRule](trimmed.substring(ClassPrefix.length).trim, valueType, "compaction rule")
    } else builtIn.getOrElse(
      trimmed.toLowerCase,
      throw new SharedStateException(
        s"Unknown compaction rule '$name'. Supported: ${names.mkString(", ")}, or '${ClassPrefix}<class name>' " +
          "for a class implementing io.sharedstate.core.compaction.CompactionRule.")
    )
  }
}
