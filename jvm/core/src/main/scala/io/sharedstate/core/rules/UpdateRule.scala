package io.sharedstate.core.rules

import io.sharedstate.core.SharedStateException
import io.sharedstate.core.row.ValueType
import java.util.concurrent.ConcurrentHashMap
import scala.jdk.CollectionConverters._

/**
 * How an update (k, t, v) computes the value stored at (k, t). `previous` is the value of the pair
 * with the largest timestamp <= t (null when there is none). Rules are applied in timestamp order
 * per key, so a non-commutative rule gives the same answer whatever order updates arrived in.
 * Values are binary rows of the State's value type.
 *
 * A user rule implements this trait with a public constructor taking a [[ValueType]] (or none) and is
 * named "class:com.example.MyRule"; or it is registered under a name with [[UpdateRule.register]].
 * Names with a prefix the engine does not know ("expr:greatest(old, new)") go to the
 * [[UpdateRuleProvider]] registered for that prefix (the Spark plugin provides "expr:").
 */
trait UpdateRule extends Serializable {
  def name: String
  def apply(previous: Array[Byte], incoming: Array[Byte]): Array[Byte]

  /** False when the rule ignores `previous`, so the applier need not copy it out. */
  def readsPrevious: Boolean = true
}

object UpdateRule {

  /** The new value replaces whatever was there. */
  object Replace extends UpdateRule {
    val name = "replace"
    def apply(previous: Array[Byte], incoming: Array[Byte]): Array[Byte] = incoming
    override def readsPrevious: Boolean = false
  }

  private val builtIn: Map[String, ValueType => UpdateRule] = Map(
    "replace" -> (_ => Replace),
    "sum" -> (t => new NumericRule("sum", t, NumericOp.Sum)),
    "add" -> (t => new NumericRule("add", t, NumericOp.Sum)),
    "min" -> (t => new NumericRule("min", t, NumericOp.Min)),
    "max" -> (t => new NumericRule("max", t, NumericOp.Max)),
    "append" -> (t => new AppendRule(t))
  )

  private val registered = new ConcurrentHashMap[String, ValueType => UpdateRule]()

  val ClassPrefix = "class:"

  def names: Seq[String] = (builtIn.keys ++ registered.keySet.asScala).toSeq.sorted

  /** Makes `name` resolve to `factory` in this JVM (for rules written in Scala or Java). */
  def register(name: String, factory: ValueType => UpdateRule): Unit = {
    val n = name.trim.toLowerCase
    if (builtIn.contains(n)) throw new SharedStateException(s"Update rule '$name' is built in and cannot be replaced.")
    registered.put(n, factory)
  }

  /** The rule `name` bound to the value type; fails naming what is allowed. */
  def resolve(name: String, valueType: ValueType): UpdateRule = {
    val trimmed = Option(name).map(_.trim).getOrElse("")
    if (trimmed.regionMatches(true, 0, ClassPrefix, 0, ClassPrefix.length)) {
      UserRules.instantiate[UpdateRule](trimmed.substring(ClassPrefix.length).trim, valueType, "update rule")
    } else {
      val n = trimmed.toLowerCase
      val factory = builtIn.getOrElse(n, registered.get(n))
      if (factory != null) factory(valueType)
      else UpdateRuleProviders.forName(trimmed) match {
        case Some((provider, body)) => provider.create(body, valueType)
        case None =>
          val prefixes = UpdateRuleProviders.all.map(p => s"'${p.prefix}...'")
          throw new SharedStateException(
            s"Unknown update rule '$name'. Supported rules: ${names.mkString(", ")}, or '${ClassPrefix}<class name>' " +
              "for a class implementing io.sharedstate.core.rules.UpdateRule" +
              (if (prefixes.isEmpty) "" else s", or ${prefixes.mkString(", ")}") +
              (if (n.startsWith("expr:") && !prefixes.contains("'expr:...'"))
                 ". 'expr:' rules (Spark SQL expressions) need the sharedstate Spark plugin on the classpath."
               else "."))
      }
    }
  }
}
