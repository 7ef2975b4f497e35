package io.sharedstate.spark

import io.sharedstate.spark.fetch.{FetchJoinStrategy, SharedStateFetchExpression}
import io.sharedstate.spark.statestore.publish.PublishCheck
import io.sharedstate.spark.txn.TransactionStrategy

import org.apache.spark.sql.{SparkSessionExtensions, SparkSessionExtensionsProvider}
import org.apache.spark.sql.catalyst.FunctionIdentifier
import org.apache.spark.sql.catalyst.expressions.ExpressionInfo

/**
 * Session extensions of the plugin. Spark finds them on the class path through ServiceLoader
 * (META-INF/services), so `--packages` or `spark.jars` is enough; listing the class in
 * `spark.sql.extensions` works too. They check every streaming write into a State when the query
 * is started, so bad options fail at `start()` instead of when the first batch is planned (which,
 * with no input yet, may be never), they plan fetch joins' and transactions' operators ([[FetchJoinStrategy]], [[TransactionStrategy]]), and they
 * add the SQL function `sharedstate_fetch`.
 */
final class SharedStateExtensions extends SparkSessionExtensionsProvider {
  override def apply(extensions: SparkSessionExtensions): Unit = {
    extensions.injectCheckRule(session => new StreamingWriteCheck(session))
    extensions.injectCheckRule(session => new PublishCheck(session))
    extensions.injectPlannerStrategy(_ => FetchJoinStrategy)
    extensions.injectPlannerStrategy(_ => TransactionStrategy)
    extensions.injectFunction((
        FunctionIdentifier(SharedStateFetchExpression.Name),
        new ExpressionInfo(
          classOf[SharedStateFetchExpression].getName,
          SharedStateFetchExpression.Name,
          "_FUNC_(state, key, time) - the read-committed latest value of a State at time, as a struct " +
            "of its value columns and <state>_time; null when the key had no value then."
        ),
        SharedStateFetchExpression.build _))
  }
}
