package io.sharedstate.spark.statestore.publish

import io.sharedstate.spark.rows.{KeyEncoder, StateSchemas}

import io.sharedstate.core.{SharedStateException, StateSpec}
import org.apache.spark.sql.catalyst.expressions.UnsafeRow
import org.apache.spark.sql.types.{DataType, StructType, TimestampNTZType, TimestampType}

/**
 * How a store's rows become a State's pairs. The State's key is the operator's key without its
 * event-time window (a `struct<start, end>` of timestamps, as `window(...)` groups by); the value is
 * the store's value row as it is. The time of a windowed key is its window's end: the value then is
 * the window's final aggregate once the watermark passes the end, an exact as-of value. Other keys
 * are stamped with the watermark of the batch that committed them.
 */
private[sharedstate] final class PublishedShape(keySchema: StructType, valueSchema: StructType) {

  /** The ordinal of the window column in the store's key, if the key has one. */
  val windowOrdinal: Option[Int] = keySchema.fields.indexWhere(f => PublishedShape.isWindow(f.dataType)) match {
    case -1 => None
    case i => Some(i)
  }

  private val keyOrdinals: Array[Int] = keySchema.indices.filterNot(i => windowOrdinal.contains(i)).toArray

  /** A key column (other than the window) is null: the State stores no such key. */
  def hasNullKey(key: UnsafeRow): Boolean = keyOrdinals.exists(key.isNullAt)

  /** The State's key columns: the operator's key without the window. */
  val stateKey: StructType = StructType(keyOrdinals.toSeq.map(keySchema(_)))

  /** One per task: the encoder reuses a buffer. */
  def encoder: KeyEncoder = KeyEncoder.columns(keySchema, keyOrdinals)

  /** The time a key's value is stamped with: its window's end, or the batch's watermark. */
  def time(key: UnsafeRow, watermarkMicros: Long): Long = windowOrdinal match {
    case Some(w) => key.getStruct(w, 2).getLong(1)
    case None => watermarkMicros
  }

  /** Fails, naming the State and both schemas, unless the State's key and value columns have the store's types. */
  def check(spec: StateSpec): Unit = {
    val schemas = StateSchemas.of(spec)
    // Types without nullability (catalogString leaves it out): the bytes a key or value is stored as depend on types only.
    def types(s: StructType): Seq[String] = s.fields.toSeq.map(_.dataType.catalogString)
    if (types(schemas.key) != types(stateKey) || types(schemas.value) != types(valueSchema))
      throw new SharedStateException(
        s"State '${spec.name}' cannot hold the published state store: the operator's key (without its window) is " +
          s"'${stateKey.toDDL}' and its value '${valueSchema.toDDL}', the State's key is '${spec.keySchema}' and " +
          s"its value '${spec.valueSchema}'. Create the State with these column types (names may differ).")
  }
}

private[sharedstate] object PublishedShape {
  def isWindow(t: DataType): Boolean = t match {
    case StructType(Array(start, end)) =>
      start.name == "start" && end.name == "end" && isTimestamp(start.dataType) && isTimestamp(end.dataType)
    case _ => false
  }

  private def isTimestamp(t: DataType): Boolean = t == TimestampType || t == TimestampNTZType
}
