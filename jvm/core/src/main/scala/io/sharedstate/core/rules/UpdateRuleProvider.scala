package io.sharedstate.core.rules

import io.sharedstate.core.row.ValueType
import java.util.ServiceLoader

/**
 * Makes update rules of the form `<prefix><body>` that the engine cannot build itself, such as the
 * Spark plugin's `expr:<Spark SQL expression>` (the engine has no Spark). Found with
 * `java.util.ServiceLoader`: an implementation is listed in
 * `META-INF/services/io.sharedstate.core.rules.UpdateRuleProvider` and has a public no-arg constructor.
 */
trait UpdateRuleProvider {

  /** The prefix this provider answers, ending with ':' (e.g. "expr:"); matched case-insensitively. */
  def prefix: String

  /**
   * The rule for `body` (what follows the prefix) over values of type `valueType`. Fails with a
   * [[io.sharedstate.core.SharedStateException]] naming the rule and what is wrong when `body`
   * cannot be a rule for that type, so a bad rule fails when the State is defined.
   */
  def create(body: String, valueType: ValueType): UpdateRule
}

private[core] object UpdateRuleProviders {

  /** The providers visible from the thread's context class loader, then from the engine's own. */
  def all: Seq[UpdateRuleProvider] = {
    val loaders = (Option(Thread.currentThread.getContextClassLoader).toSeq :+ getClass.getClassLoader).distinct
    loaders.flatMap(l => loadable(ServiceLoader.load(classOf[UpdateRuleProvider], l)))
      .groupBy(_.getClass.getName).values.map(_.head).toSeq
  }

  // A listed provider whose classes are missing here (the Spark plugin's, in an embedded JVM with no
  // Spark) is skipped, so it cannot break the rules every JVM has.
  private def loadable(loader: ServiceLoader[UpdateRuleProvider]): Seq[UpdateRuleProvider] = {
    val it = loader.iterator()
    val found = Seq.newBuilder[UpdateRuleProvider]
    var more = true
    var failures = 0
    while (more && failures < 16) { // an iterator that keeps failing is not tried forever
      try {
        if (it.hasNext) { val p = it.next(); p.prefix; found += p }
        else more = false
      } catch { case _: java.util.ServiceConfigurationError | _: LinkageError => failures += 1 }
    }
    found.result()
  }

  /** The provider whose prefix starts `name`, if any. */
  def forName(name: String): Option[(UpdateRuleProvider, String)] =
    if (name.indexOf(':') < 0) None
    else all.collectFirst {
      case p if name.regionMatches(true, 0, p.prefix, 0, p.prefix.length) => (p, name.substring(p.prefix.length).trim)
    }
}
