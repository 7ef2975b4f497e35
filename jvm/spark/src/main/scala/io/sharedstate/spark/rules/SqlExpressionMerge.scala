package io.sharedstate.spark.rules

import io.sharedstate.core.partial.PartialMerge
import io.sharedstate.core.row.ValueType

/**
 * The partial merge `expr:<Spark SQL expression>` over `a` and `b`, two instances' values (structs
 * when the value has several columns), evaluated like the `expr:` update rule.
 */
private[sharedstate] final class SqlExpressionMerge(expression: String, valueType: ValueType) extends PartialMerge {
  private val rule = new SqlExpressionRule(expression, valueType, SqlExpressionRule.MergeSides)
  def name: String = rule.name
  def merge(a: Array[Byte], b: Array[Byte]): Array[Byte] = rule.apply(a, b)
}
