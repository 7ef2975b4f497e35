package io.sharedstate.spark.write

import io.sharedstate.spark.rows.KeyEncoder
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, UnsafeProjection}
import org.apache.spark.sql.types.StructType

/**
 * Cuts the key and value columns out of a sink's input row as compact binary rows (UnsafeRow
 * bytes): the form the engine stores, nothing converted to objects. Keys through the one
 * [[KeyEncoder]]. Not thread-safe: one per task.
 */
private[sharedstate] final class RowBinder(input: StructType, keyOrdinals: Array[Int], valueOrdinals: Array[Int]) {
  private val keys = KeyEncoder.columns(input, keyOrdinals)
  private val valueProjection =
    UnsafeProjection.create(valueOrdinals.toSeq.map(i => BoundReference(i, input(i).dataType, input(i).nullable)))

  def keyHasNull(row: InternalRow): Boolean = keyOrdinals.exists(row.isNullAt)
  def keyBytes(row: InternalRow): Array[Byte] = keys.bytes(row)
  // copy(): a projection reuses its buffer, and getBytes may hand that buffer out as it is.
  def valueBytes(row: InternalRow): Array[Byte] = valueProjection(row).copy().getBytes
}
