package io.sharedstate.core.rules

import io.sharedstate.core.SharedStateException
import io.sharedstate.core.row.{BinaryRow, ValueType}

/**
 * A test [[UpdateRuleProvider]] (listed in the test resources' META-INF/services): `join:<sep>` stores
 * the previous string value, `<sep>`, then the incoming one.
 */
class JoinRuleProvider extends UpdateRuleProvider {
  def prefix: String = "join:"
  def create(body: String, valueType: ValueType): UpdateRule = {
    if (body.isEmpty) throw new SharedStateException(s"Update rule 'join:': the separator is empty.")
    new UpdateRule {
      val name = s"join:$body"
      def apply(previous: Array[Byte], incoming: Array[Byte]): Array[Byte] =
        if (previous == null) incoming
        else BinaryRow.encode(valueType,
          Array(s"${BinaryRow.decode(valueType, previous)(0)}$body${BinaryRow.decode(valueType, incoming)(0)}"))
    }
  }
}
