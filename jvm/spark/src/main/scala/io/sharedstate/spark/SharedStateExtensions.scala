package io.sharedstate.spark

import org.apache.spark.sql.SparkSessionExtensions

/**
 * `spark.sql.extensions=io.sharedstate.spark.SharedStateExtensions` (set by `sharedstate.session`):
 * checks every streaming write into a State when the query is started, so bad options fail at
 * `start()` instead of when the first batch is planned (which, with no input yet, may be never).
 */
final class SharedStateExtensions extends (SparkSessionExtensions => Unit) {
  override def apply(extensions: SparkSessionExtensions): Unit =
    extensions.injectCheckRule(_ => StreamingWriteCheck)
}
