package io.sharedstate.core.partial

import io.sharedstate.core.SharedStateException
import io.sharedstate.core.row.ValueType
import io.sharedstate.core.rules.{NumericOp, NumericRule, UserRules}
import java.util.ServiceLoader
import scala.util.control.NonFatal

/**
 * How the instances of a partial State reconcile into the value a global fetch reads (SDG's merge):
 * `merge(a, b)` of two values of the State's value type, both non-null, applied left to right over
 * the instances in ascending instance order. A merge should be associative and commutative so the
 * merged value does not depend on how writers were partitioned; the engine does not check it.
 *
 * A user merge implements this trait with a public constructor taking the value [[ValueType]] (or
 * none) and is named "class:com.example.MyMerge"; "<prefix>:<body>" goes to the
 * [[PartialMergeProvider]] for that prefix (the Spark plugin provides "expr:<SQL over a and b>").
 */
trait PartialMerge extends Serializable {
  def name: String
  def merge(a: Array[Byte], b: Array[Byte]): Array[Byte]
}

object PartialMerge {
  val ClassPrefix = "class:"
  val BuiltInNames: Seq[String] = Seq("sum", "min", "max", "union")

  /** The column-wise merges share the update rules' arithmetic (element-wise on numeric arrays). */
  private final class Numeric(val name: String, t: ValueType, op: NumericOp) extends PartialMerge {
    private val rule = new NumericRule(name, t, op)
    def merge(a: Array[Byte], b: Array[Byte]): Array[Byte] = rule.apply(a, b)
  }

  /**
   * The merge `name` for State `state`'s values; fails naming the State, the merge and the value type
   * when they do not fit, and what is allowed when the name is unknown.
   */
  def resolve(state: String, name: String, valueType: ValueType): PartialMerge = {
    val trimmed = Option(name).map(_.trim).getOrElse("")
    val n = trimmed.toLowerCase
    def misfit(e: Throwable) = new SharedStateException(
      s"State '$state': partial merge '$trimmed' does not fit the value type <${valueType.ddl}>: ${e.getMessage}", e)
    try {
      if (n.startsWith(ClassPrefix))
        UserRules.instantiate[PartialMerge](trimmed.substring(ClassPrefix.length).trim, valueType, "partial merge")
      else n match {
        case "sum" => new Numeric("sum", valueType, NumericOp.Sum)
        case "min" => new Numeric("min", valueType, NumericOp.Min)
        case "max" => new Numeric("max", valueType, NumericOp.Max)
        case "union" => new UnionMerge(valueType)
        case _ =>
          providers.collectFirst {
            case p if trimmed.regionMatches(true, 0, p.prefix, 0, p.prefix.length) =>
              p.create(trimmed.substring(p.prefix.length).trim, valueType)
          }.getOrElse(throw new SharedStateException(
              s"State '$state': unknown partial merge '$name'. Supported: ${BuiltInNames.mkString(", ")}, " +
                s"'${ClassPrefix}<class name>' for a class implementing ${classOf[PartialMerge].getName}" +
                providers.map(p => s", '${p.prefix}...'").mkString +
                (if (n.startsWith("expr:") && !providers.exists(_.prefix == "expr:"))
                   " ('expr:' merges need the sharedstate Spark plugin on the classpath)."
                 else ".")))
      }
    } catch {
      case e: SharedStateException if e.getMessage.startsWith(s"State '$state'") => throw e
      case e: SharedStateException => throw misfit(e)
      case NonFatal(e) => throw misfit(e)
    }
  }

  private def providers: Seq[PartialMergeProvider] = {
    val loaders = (Option(Thread.currentThread.getContextClassLoader).toSeq :+ getClass.getClassLoader).distinct
    loaders.flatMap { l =>
      val it = ServiceLoader.load(classOf[PartialMergeProvider], l).iterator()
      val found = Seq.newBuilder[PartialMergeProvider]
      var more = true
      var failures = 0
      // A listed provider whose classes are missing (Spark's, in an embedded JVM) is skipped.
      while (more && failures < 16) {
        try {
          if (it.hasNext) { val p = it.next(); p.prefix; found += p }
          else more = false
        } catch { case _: java.util.ServiceConfigurationError | _: LinkageError => failures += 1 }
      }
      found.result()
    }.groupBy(_.getClass.getName).values.map(_.head).toSeq
  }
}

/**
 * Makes merges `<prefix><body>` the engine cannot build itself, such as the Spark plugin's
 * `expr:<Spark SQL over a and b>`. Listed in `META-INF/services/io.sharedstate.core.partial.PartialMergeProvider`,
 * with a public no-arg constructor.
 */
trait PartialMergeProvider {

  /** The prefix this provider answers, ending with ':'; matched case-insensitively. */
  def prefix: String

  /** The merge for `body` over values of `valueType`; fails when `body` cannot be one. */
  def create(body: String, valueType: ValueType): PartialMerge
}
