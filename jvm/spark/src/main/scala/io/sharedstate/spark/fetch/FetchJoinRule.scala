package io.sharedstate.spark.fetch

import io.sharedstate.spark.config.Intervals
import io.sharedstate.spark.rows.StateSchemas

import io.sharedstate.core.{Key, SharedStateException}
import io.sharedstate.core.fetch.{FetchRequest, FetchRule, RangeAggregate, ReadMode}
import io.sharedstate.core.row.ValueType
import org.apache.spark.sql.types.{ArrayType, DoubleType, LongType, StructField, StructType, TimestampType}

/**
 * What a fetch join reads for an event at time t, and the columns it adds: `latest` (the value and
 * its timestamp), `range` over [t - window, t] (one array of (time, value) structs, oldest first), or
 * an aggregate over [t - window, t] (one column per result: `sum_<col>`, `avg_<col>`, `<state>_count`, ...).
 */
private[sharedstate] sealed trait FetchJoinRule extends Serializable {
  def name: String

  /** How far before the event's time the rule reads: F may pass a fetch only by this much less. */
  def windowMicros: Long
  def addedColumns(schemas: StateSchemas): Seq[StructField]
  def request(key: Key, t: Long, mode: ReadMode, valueType: ValueType): FetchRequest
}

private[sharedstate] object FetchJoinRule {
  case object Latest extends FetchJoinRule {
    val name = "latest"
    val windowMicros = 0L
    def addedColumns(schemas: StateSchemas): Seq[StructField] =
      schemas.value.fields.map(_.copy(nullable = true)).toSeq :+ StructField(schemas.timeColumn, TimestampType)
    def request(key: Key, t: Long, mode: ReadMode, valueType: ValueType): FetchRequest =
      FetchRequest(key, t, FetchRule.Latest, mode)
  }

  final case class Range(windowMicros: Long) extends FetchJoinRule {
    val name = "range"
    def addedColumns(schemas: StateSchemas): Seq[StructField] = Seq(StructField(Range.column(schemas),
        ArrayType(pairSchema(schemas), containsNull = false), nullable = true))
    def request(key: Key, t: Long, mode: ReadMode, valueType: ValueType): FetchRequest =
      FetchRequest(key, t, FetchRule.Range(from(t, windowMicros)), mode)
  }

  object Range {
    def column(schemas: StateSchemas): String = s"${schemas.stateName}_range"
  }

  final case class Aggregate(function: String, windowMicros: Long) extends FetchJoinRule {
    def name: String = function
    def addedColumns(schemas: StateSchemas): Seq[StructField] = resultSchema(schemas).fields.toSeq
    def request(key: Key, t: Long, mode: ReadMode, valueType: ValueType): FetchRequest =
      FetchRequest(key, t, RangeAggregate(function, from(t, windowMicros), valueType), mode)

    /** The Spark columns of the engine's result row (same order and types as RangeAggregate.resultType). */
    def resultSchema(schemas: StateSchemas): StructType = function match {
      case "count" => StructType(Seq(StructField(s"${schemas.stateName}_count", LongType)))
      case "avg" => StructType(schemas.value.fields.map(f => StructField(s"avg_${f.name}", DoubleType)))
      case "collect" =>
        val f = schemas.value.fields.head
        StructType(Seq(StructField(s"collect_${f.name}", ArrayType(f.dataType, containsNull = true))))
      case fn => StructType(schemas.value.fields.map(f => StructField(s"${fn}_${f.name}", f.dataType)))
    }
  }

  val Names: Seq[String] = Seq("latest", "range") ++ RangeAggregate.Functions

  /** The rule `name` for State `schemas`; ranges and aggregates need `window` ("10 minutes"), latest must not have one. */
  def parse(name: String, window: String, schemas: StateSchemas, valueType: ValueType, stateRules: Seq[String])
      : FetchJoinRule = {
    val n = Option(name).map(_.trim.toLowerCase).getOrElse("")
    if (!Names.contains(n)) throw new SharedStateException(
      s"Fetch join: rule '$name' is not supported; supported: ${Names.mkString(", ")}.")
    if (!stateRules.map(_.trim.toLowerCase).contains(n)) throw new SharedStateException(
      s"Fetch join: State '${schemas.stateName}' does not answer fetch rule '$n'. Its fetch rules: ${stateRules.mkString(", ")}.")
    if (n == "latest") {
      if (window != null) throw new SharedStateException(
        "Fetch join: window applies to rule 'range' and the aggregates only; 'latest' reads the newest value at or before the event's time.")
      Latest
    } else {
      if (window == null) throw new SharedStateException(
        s"Fetch join: rule '$n' needs a window, e.g. window='10 minutes', to read the pairs in [time - window, time].")
      val micros = Intervals.parseMicros("window", window)
      if (n == "range") Range(micros)
      else {
        RangeAggregate(n, 0L, valueType) // fails now, with the column at fault, if the value type does not fit
        Aggregate(n, micros)
      }
    }
  }

  def pairSchema(schemas: StateSchemas): StructType =
    StructType(StructField(schemas.timeColumn, TimestampType, nullable = false) +: schemas.value.fields.map(
      _.copy(nullable = true)))

  private def from(t: Long, window: Long): Long = if (t - window > t) Long.MinValue else t - window
}
