package io.sharedstate.spark.rows

import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{BoundReference, UnsafeProjection}
import org.apache.spark.sql.types.StructType

/**
 * Cuts the key and value columns out of an input row as compact binary rows (UnsafeRow bytes):
 * the form the engine stores, so equal keys have equal bytes and nothing is converted to objects.
 * Not thread-safe: one per task.
 */
final class RowBinder(input: StructType, keyOrdinals: Array[Int], valueOrdinals: Array[Int]) {
  private val keyProjection = project(keyOrdinals)
  private val valueProjection = project(valueOrdinals)

  def keyHasNull(row: InternalRow): Boolean = keyOrdinals.exists(row.isNullAt)
  // copy(): a projection reuses its buffer, and getBytes may hand that buffer out as it is.
  def keyBytes(row: InternalRow): Array[Byte] = keyProjection(row).copy().getBytes
  def valueBytes(row: InternalRow): Array[Byte] = valueProjection(row).copy().getBytes

  private def project(ordinals: Array[Int]): UnsafeProjection =
    UnsafeProjection.create(ordinals.toSeq.map(i => BoundReference(i, input(i).dataType, input(i).nullable)))
}
