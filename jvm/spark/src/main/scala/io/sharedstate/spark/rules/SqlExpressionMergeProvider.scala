package io.sharedstate.spark.rules

import io.sharedstate.core.partial.{PartialMerge, PartialMergeProvider}
import io.sharedstate.core.row.ValueType

/** Provides `expr:` merges to the engine (META-INF/services/io.sharedstate.core.partial.PartialMergeProvider). */
final class SqlExpressionMergeProvider extends PartialMergeProvider {
  // A literal: see SqlExpressionRuleProvider.
  def prefix: String = "expr:"
  def create(body: String, valueType: ValueType): PartialMerge = new SqlExpressionMerge(body, valueType)
}
