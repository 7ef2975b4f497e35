package io.sharedstate.spark.rows

import io.sharedstate.core.Key
import org.apache.spark.sql.Row
import org.apache.spark.sql.catalyst.{CatalystTypeConverters, InternalRow}
import org.apache.spark.sql.catalyst.expressions.{BoundReference, Expression, GetStructField, UnsafeProjection}
import org.apache.spark.sql.types.StructType
import org.apache.spark.unsafe.Platform

/**
 * The one key encoder: a key as the bytes a State stores it under (the UnsafeRow of the key
 * columns), so equal keys have equal bytes wherever they were encoded. The sink, the fetch join, the
 * continuous fetch join and the SQL function each build theirs here, from the row form they see;
 * every form goes through the same projection to an UnsafeRow. Not thread-safe: one per task.
 */
private[sharedstate] final class KeyEncoder private (projection: UnsafeProjection) {

  /** The key of `row`, as fresh bytes (the projection reuses its buffer; the bytes are a copy). */
  def bytes(row: InternalRow): Array[Byte] = {
    val key = projection(row)
    val out = new Array[Byte](key.getSizeInBytes)
    key.writeToMemory(out, Platform.BYTE_ARRAY_OFFSET)
    out
  }

  def key(row: InternalRow): Key = new Key(bytes(row))
}

private[sharedstate] object KeyEncoder {

  /** Keys in the columns at `ordinals` of rows of `schema` (the sink's input, a fetch join's events). */
  def columns(schema: StructType, ordinals: Array[Int]): KeyEncoder =
    new KeyEncoder(
      UnsafeProjection.create(ordinals.toSeq.map(i => BoundReference(i, schema(i).dataType, schema(i).nullable))))

  /**
   * Keys given as one expression (the SQL function's argument): the key column itself for a
   * one-column key, else a struct of the key's columns in order.
   */
  def expression(key: Expression, keySchema: StructType): KeyEncoder =
    new KeyEncoder(UnsafeProjection.create(
        if (keySchema.length == 1) Seq(key) else keySchema.indices.map(i => GetStructField(key, i))))

  /** Keys given as external Rows of the key columns (the continuous fetch join's events). */
  def externalRows(keySchema: StructType): Row => Key = {
    val toInternal = CatalystTypeConverters.createToCatalystConverter(keySchema)
    val encoder = columns(keySchema, keySchema.indices.toArray)
    row => encoder.key(toInternal(row).asInstanceOf[InternalRow])
  }
}
