package io.sharedstate.core.fetch

import io.sharedstate.core.{FetchAnswer, SharedStateException, ValueSet}
import io.sharedstate.core.row.ValueType
import io.sharedstate.core.rules.UserRules

/**
 * What a fetch at time t reads from one key's value set (null when the key has none). A user rule
 * implements this trait (constructor taking the State's value [[ValueType]], or none) and is named
 * "class:com.example.MyFetch".
 */
trait FetchRule extends Serializable {
  def name: String

  /**
   * The oldest timestamp the answer at `t` depends on. The engine refuses a fetch whose lower bound
   * is below fetch progress F, since compaction may have dropped what it needs.
   */
  def lowerBound(t: Long): Long
  def answer(set: ValueSet, t: Long): FetchAnswer
}

object FetchRule {

  /** The newest pair with timestamp <= t. keep_latest keeps it whenever F <= t. */
  object Latest extends FetchRule {
    val name = "latest"
    def lowerBound(t: Long): Long = t
    def answer(set: ValueSet, t: Long): FetchAnswer.LatestAnswer =
      if (set == null) FetchAnswer.Absent
      else {
        val i = set.latestIndex(t)
        // A transaction's delete (an empty value) reads as no value.
        if (i < 0 || set.isDeleted(i)) FetchAnswer.Absent else FetchAnswer.Found(set.timeAt(i), set.valueAt(i))
      }
  }

  /** Every pair with from <= timestamp <= t, oldest first. */
  final case class Range(from: Long) extends FetchRule {
    val name = "range"
    def lowerBound(t: Long): Long = from
    def answer(set: ValueSet, t: Long): FetchAnswer = {
      if (set == null || from > t) FetchAnswer.Pairs(Array.emptyLongArray, Array.empty)
      else {
        val a = set.firstIndexAtOrAfter(from)
        val b = set.latestIndex(t) + 1
        val live = (a until math.max(a, b)).filterNot(set.isDeleted) // without a transaction's deletes
        FetchAnswer.Pairs(live.map(set.timeAt).toArray, live.map(set.valueAt).toArray)
      }
    }
  }

  val AggregateNames: Seq[String] = RangeAggregate.Functions
  val BuiltInNames: Seq[String] = Seq("latest", "range") ++ AggregateNames
  val ClassPrefix = "class:"

  /** Fails unless `name` is a built-in fetch rule or a loadable "class:<name>". */
  def checkName(name: String): Unit = {
    val n = Option(name).map(_.trim.toLowerCase).getOrElse("")
    if (!BuiltInNames.contains(n) && !n.startsWith(ClassPrefix)) throw new SharedStateException(
      s"Unknown fetch rule '$name'. Supported: ${BuiltInNames.mkString(", ")}, or '${ClassPrefix}<class name>'.")
  }

  /**
   * A rule by name: "latest", "range" over [from, t], an aggregate over [from, t] (sum, count, min, max,
   * avg, collect) for the State's value type, or "class:<name>".
   */
  def resolve(name: String, valueType: ValueType, from: Long = Long.MinValue): FetchRule = {
    val trimmed = Option(name).map(_.trim).getOrElse("")
    val n = trimmed.toLowerCase
    if (n.startsWith(ClassPrefix))
      UserRules.instantiate[FetchRule](trimmed.substring(ClassPrefix.length).trim, valueType, "fetch rule")
    else if (n == "latest") Latest
    else if (n == "range") Range(from)
    else if (AggregateNames.contains(n)) RangeAggregate(n, from, valueType)
    else throw new SharedStateException(s"Unknown fetch rule '$name'. Supported: ${BuiltInNames.mkString(", ")}, " +
      s"or '${ClassPrefix}<class name>' for a class implementing io.sharedstate.core.fetch.FetchRule.")
  }
}
