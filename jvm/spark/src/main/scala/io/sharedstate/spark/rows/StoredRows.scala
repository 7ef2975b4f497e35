package io.sharedstate.spark.rows

import org.apache.spark.sql.catalyst.expressions.UnsafeRow

/** Stored keys and values are UnsafeRow bytes: wraps them as rows without copying (null stays null). */
private[sharedstate] object StoredRows {
  def wrap(bytes: Array[Byte], fields: Int): UnsafeRow =
    if (bytes == null) null else { val row = new UnsafeRow(fields); row.pointTo(bytes, bytes.length); row }
}
