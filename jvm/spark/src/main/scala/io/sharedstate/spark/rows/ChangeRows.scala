package io.sharedstate.spark.rows

import io.sharedstate.core.Change
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, JoinedRow}

/** A change as a row of the change stream: key columns, value columns, then `<state>_time`. */
private[sharedstate] final class ChangeRows(schemas: StateSchemas) extends Serializable {
  private val keyWidth = schemas.key.length
  private val valueWidth = schemas.value.length

  def row(c: Change): InternalRow =
    new JoinedRow(StoredRows.wrap(c.key, keyWidth),
      new JoinedRow(StoredRows.wrap(schemas.shown(c.value), valueWidth), new GenericInternalRow(Array[Any](c.time))))
}
