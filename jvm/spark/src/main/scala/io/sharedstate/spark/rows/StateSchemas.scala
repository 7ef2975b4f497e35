package io.sharedstate.spark.rows

import io.sharedstate.core.{SharedStateException, StateSpec}
import io.sharedstate.core.partial.{PartialValues, PartialView}
import org.apache.spark.sql.types.{DataType, IntegerType, LongType, StringType, StructField, StructType, TimestampType}
import scala.util.control.NonFatal

/**
 * Spark schemas of a State: its key and value structs, and the columns reads and joins produce.
 * `partial` is how a partial State's stored instances read as one value (null for other States).
 */
private[sharedstate] final case class StateSchemas(stateName: String, key: StructType, value: StructType,
    partial: PartialView = null) {

  /** The value rows show for a stored value: a partial State's instances merged. */
  def shown(stored: Array[Byte]): Array[Byte] = if (partial == null) stored else partial.merged(stored)

  /** The value an update carried, without a partial State's instance tag (rejected updates show it so). */
  def updateValue(incoming: Array[Byte]): Array[Byte] =
    if (partial == null || incoming == null) incoming
    else
      try PartialValues.values(incoming).head
      catch { case _: SharedStateException | _: NoSuchElementException => incoming }

  /** The column that carries the timestamp of the value used, in fetch joins and as-of reads. */
  def timeColumn: String = s"${stateName}_time"

  /** key columns, value columns, then the value's timestamp. */
  def asOfSchema: StructType =
    StructType(key.fields ++ value.fields.map(_.copy(nullable = true)) :+ StructField(timeColumn, TimestampType))

  /** A partial State's as-of read by instance: key columns, `instance`, value columns, the value's timestamp. */
  def instancesSchema: StructType = StructType(key.fields ++ Seq(StructField(StateSchemas.InstanceColumn,
      IntegerType, nullable = false)) ++ value.fields.map(_.copy(nullable = true)) :+
    StructField(timeColumn, TimestampType))

  /** The rejected table: late and rejected updates, with the reason and the U they arrived at. */
  def rejectedSchema: StructType = StructType(Seq(
      StructField("key", key, nullable = true),
      StructField("time", TimestampType, nullable = true),
      StructField("value", value, nullable = true),
      StructField("reason", StringType, nullable = false),
      StructField("writer", StringType, nullable = false),
      StructField("epoch", LongType, nullable = false),
      StructField("update_progress", TimestampType, nullable = true)
    ))
}

private[sharedstate] object StateSchemas {
  val InstanceColumn = "instance"

  def of(spec: StateSpec): StateSchemas =
    StateSchemas(spec.name, parse(spec.name, "key", spec.keySchema), parse(spec.name, "value", spec.valueSchema),
      spec.partialView)

  def parse(state: String, what: String, ddl: String): StructType = {
    val schema =
      try StructType.fromDDL(ddl)
      catch {
        case NonFatal(e) => throw new SharedStateException(
            s"State '$state': the $what schema '$ddl' is not a valid DDL column list such as " +
              s"'ad_id STRING' or 'user STRING, item BIGINT': ${e.getMessage}", e)
      }
    if (schema.isEmpty) throw new SharedStateException(s"State '$state': the $what schema has no column.")
    schema
  }

  /** Ordinals of `names` in `schema`, checking each column's type against `expected`. */
  def bindColumns(schema: StructType, names: Seq[String], expected: StructType, option: String,
      state: String): Array[Int] = {
    if (names.length != expected.length) {
      throw new SharedStateException(s"Option '$option' names ${names.length} column(s) " +
        s"(${names.mkString(", ")}) but State '$state' has ${expected.length}: ${expected.toDDL}.")
    }
    names.zip(expected.fields).map { case (name, field) =>
      val i = ordinal(schema, name, option)
      checkType(schema(i).dataType, field.dataType, name, s"State '$state' expects ${field.name} ${field.dataType.sql}")
      i
    }.toArray
  }

  /** Column lookup as Spark resolves names: exact first, then case-insensitively when unambiguous. */
  def ordinal(schema: StructType, name: String, option: String): Int = {
    val exact = schema.fieldNames.indexOf(name)
    lazy val folded = schema.fieldNames.zipWithIndex.filter(_._1.equalsIgnoreCase(name)).map(_._2)
    if (exact >= 0) exact
    else if (folded.length == 1) folded.head
    else throw new SharedStateException(
      s"Option '$option': column '$name' does not exist. Available columns: ${schema.fieldNames.mkString(", ")}.")
  }

  def checkType(actual: DataType, expected: DataType, column: String, why: String): Unit = {
    if (!DataType.equalsIgnoreNullability(actual, expected)) {
      throw new SharedStateException(s"Column '$column' has type ${actual.sql}, but $why.")
    }
  }

  def checkTimestamp(schema: StructType, column: String, option: String): Int = {
    val i = ordinal(schema, column, option)
    if (schema(i).dataType != TimestampType) {
      throw new SharedStateException(s"Option '$option': column '$column' has type ${schema(i).dataType.sql}; " +
        "it must be TIMESTAMP (event time). Convert it first, e.g. with to_timestamp().")
    }
    i
  }
}
