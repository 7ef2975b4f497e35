package io.sharedstate.spark.rules

import io.sharedstate.core.row.ValueType
import io.sharedstate.core.rules.{UpdateRule, UpdateRuleProvider}

/**
 * Provides `expr:<Spark SQL expression>` update rules to the engine. Public with a no-arg constructor
 * because ServiceLoader instantiates it (META-INF/services/io.sharedstate.core.rules.UpdateRuleProvider).
 */
final class SqlExpressionRuleProvider extends UpdateRuleProvider {
  // A literal, not SqlExpressionRule.Prefix: the engine asks every provider for its prefix, also in an
  // embedded JVM with no Spark, where touching SqlExpressionRule would load Spark's classes.
  def prefix: String = "expr:"
  def create(body: String, valueType: ValueType): UpdateRule = new SqlExpressionRule(body, valueType)
}
