package io.sharedstate.spark.config

import io.sharedstate.core.{SharedStateException, StateSpec}
import io.sharedstate.core.fetch.FetchRule
import org.apache.spark.network.util.JavaUtils
import scala.util.control.NonFatal

/**
 * The options a State is created with, as a user gives them (Scala, Python), checked and turned into
 * the engine's StateSpec. Each error names the option and what is allowed.
 *
 * @param fetchRules     the fetch rules the State answers (built-in names or "class:<name>"); all built-ins by default
 * @param compaction     `keep_latest` (default), `none` or "class:<name>"
 * @param latePolicy     what an update below U gets at commit: `reject` (rejected table, default) or `fail`
 * @param memoryLimit    bytes the State may hold ("512m", "2g" or a number of bytes); null = no limit
 * @param sweepInterval  period of the bounded background compaction sweep ("0" = lazy compaction only)
 * @param partial        the merge of a partial State (`sum`, `min`, `max`, `union`, "class:<name>",
 *                       "expr:<SQL over a and b>"); null = not partial (see docs/partial-state.md)
 * @param instances      what an instance of a partial State is: `task` (the writer task's partition,
 *                       default) or `query` (the writer query)
 */
final case class StateOptions(fetchRules: Seq[String] = FetchRule.BuiltInNames,
    compaction: String = StateOptions.DefaultCompaction, latePolicy: String = StateSpec.RejectLate,
    memoryLimit: String = null, sweepInterval: String = StateOptions.DefaultSweepInterval,
    partial: String = null, instances: String = null) {

  def spec(name: String, key: String, value: String, partitions: Int, rule: String): StateSpec = {
    val rules = Option(fetchRules).getOrElse(FetchRule.BuiltInNames).map(_.trim).filter(_.nonEmpty)
    if (rules.isEmpty) throw new SharedStateException(
      s"State '$name': option 'fetch_rules' lists no rule; give at least one of ${FetchRule.BuiltInNames.mkString(", ")}.")
    val policy = Option(latePolicy).map(_.trim.toLowerCase).getOrElse(StateSpec.RejectLate)
    if (!StateSpec.LatenessPolicies.contains(policy)) throw new SharedStateException(
      s"State '$name': option 'late_policy' is '$latePolicy'; use one of ${StateSpec.LatenessPolicies.mkString(", ")}.")
    StateSpec(
      name,
      key.trim,
      value.trim,
      partitions,
      StateOptions.normalisedRule(rule),
      fetchRules = rules,
      compaction = StateOptions.normalisedRule(Option(compaction).getOrElse(StateOptions.DefaultCompaction)),
      lateness = policy,
      memoryLimitBytes = StateOptions.bytes(name, memoryLimit),
      compactionIntervalMs = StateOptions.sweepMs(name, sweepInterval),
      partial = Option(partial).map(p => StateOptions.normalisedRule(p)).getOrElse(""),
      instances = StateOptions.instanceKind(name, partial, instances)
    )
  }
}

object StateOptions {
  val DefaultCompaction = "keep_latest"

  /** Compaction sweeps by default, so memory stays bounded with no fetch join reporting F by lateness. */
  val DefaultSweepInterval = "10 seconds"

  // Built-in names are case-insensitive; a user class name ("class:com.acme.Rule") is not.
  private[sharedstate] def normalisedRule(rule: String): String = {
    val r = rule.trim
    if (r.regionMatches(true, 0, "class:", 0, 6) || r.regionMatches(true, 0, "expr:", 0, 5)) r else r.toLowerCase
  }

  private def instanceKind(state: String, partial: String, instances: String): String = {
    val kind = Option(instances).map(_.trim.toLowerCase).filter(_.nonEmpty)
    if (kind.isDefined && Option(partial).forall(_.trim.isEmpty)) throw new SharedStateException(
      s"State '$state': option 'instances' applies to partial States only; give 'partial' (a merge) too.")
    val k = kind.getOrElse(StateSpec.TaskInstances)
    if (!StateSpec.InstanceKinds.contains(k)) throw new SharedStateException(
      s"State '$state': option 'instances' is '$instances'; use one of ${StateSpec.InstanceKinds.mkString(", ")}.")
    k
  }

  private def bytes(state: String, text: String): Long =
    if (text == null || text.trim.isEmpty || text.trim == "0") 0L
    else {
      val n =
        try JavaUtils.byteStringAsBytes(text.trim)
        catch {
          case NonFatal(e) => throw new SharedStateException(
              s"State '$state': option 'memory_limit' is '$text'; use a size such as '512m' or '2g', or bytes.", e)
        }
      if (n < 0) throw new SharedStateException(s"State '$state': option 'memory_limit' must be >= 0, got '$text'.")
      n
    }

  private def sweepMs(state: String, text: String): Long = {
    val t = Option(text).map(_.trim).getOrElse(DefaultSweepInterval)
    if (t == "0") 0L else Intervals.parseMicros("sweep_interval", t) / 1000L
  }
}
