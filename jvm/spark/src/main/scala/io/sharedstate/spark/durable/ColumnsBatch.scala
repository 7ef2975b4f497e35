package io.sharedstate.spark.durable

import io.delta.kernel.data.{ColumnVector, ColumnarBatch}
import io.delta.kernel.types.{DataType, StructType}

/**
 * A Kernel ColumnarBatch over plain arrays, one per column (boxed where a column can be null), so a
 * task's rows go to Kernel's Parquet writer without any internal Kernel class.
 */
private[sharedstate] final class ColumnsBatch(schema: StructType, columns: IndexedSeq[Array[_ <: AnyRef]], rows: Int)
    extends ColumnarBatch {
  require(columns.length == schema.length(), s"${columns.length} columns for a schema of ${schema.length()}")

  override def getSchema: StructType = schema
  override def getSize: Int = rows
  override def getColumnVector(ordinal: Int): ColumnVector =
    new ColumnsBatch.Vector(schema.at(ordinal).getDataType, columns(ordinal), rows)
}

private[sharedstate] object ColumnsBatch {
  private final class Vector(dataType: DataType, values: Array[_ <: AnyRef], size: Int) extends ColumnVector {
    override def getDataType: DataType = dataType
    override def getSize: Int = size
    override def close(): Unit = ()
    override def isNullAt(row: Int): Boolean = values(row) == null
    override def getInt(row: Int): Int = values(row).asInstanceOf[java.lang.Integer].intValue
    override def getLong(row: Int): Long = values(row).asInstanceOf[java.lang.Long].longValue
    override def getBinary(row: Int): Array[Byte] = values(row).asInstanceOf[Array[Byte]]
    override def getString(row: Int): String = values(row).asInstanceOf[String]
  }
}
