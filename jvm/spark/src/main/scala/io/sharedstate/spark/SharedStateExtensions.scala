package io.sharedstate.spark

import org.apache.spark.sql.{SparkSessionExtensions, SparkSessionExtensionsProvider}

/**
 * Session extensions of the plugin. Spark finds them on the class path through ServiceLoader
 * (META-INF/services), so `--packages` or `spark.jars` is enough; listing the class in
 * `spark.sql.extensions` works too. They check every streaming write into a State when the query
 * is started, so bad options fail at `start()` instead of when the first batch is planned (which,
 * with no input yet, may be never).
 */
final class SharedStateExtensions extends SparkSessionExtensionsProvider {
  override def apply(extensions: SparkSessionExtensions): Unit =
    extensions.injectCheckRule(_ => StreamingWriteCheck)
}
