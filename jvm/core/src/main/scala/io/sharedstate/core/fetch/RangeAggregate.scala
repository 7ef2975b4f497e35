package io.sharedstate.core.fetch

import io.sharedstate.core.{FetchAnswer, SharedStateException, ValueSet}
import io.sharedstate.core.row.{BinaryRow, BinaryRowWriter, Field, FieldType, ValueType}
import io.sharedstate.core.rules.{NumericOp, NumericRule}

/**
 * An aggregate over the pairs with from <= timestamp <= t, answered as one binary row:
 * `count` -> (count BIGINT); `sum`/`min`/`max` -> a row of the value type, column by column (numeric
 * arrays element-wise); `avg` -> each numeric column as DOUBLE; `collect` -> the single value column
 * as an ARRAY. Null columns are skipped. An empty range answers Absent, except count (0) and collect ([]).
 */
final case class RangeAggregate(function: String, from: Long, valueType: ValueType) extends FetchRule {
  import RangeAggregate._

  val name: String = function
  // A reader with no data, rebuilt where the rule is used: requests carry the rule to remote hosts
  // (Java serialisation), and BinaryRow is not serialisable.
  @transient private lazy val row = new BinaryRow(valueType.size)

  val resultType: ValueType = function match {
    case "count" => ValueType.of("count" -> FieldType.LongType)
    case "sum" => NumericRule.check("sum", valueType, NumericOp.Sum); valueType
    case "min" => NumericRule.check("min", valueType, NumericOp.Min); valueType
    case "max" => NumericRule.check("max", valueType, NumericOp.Max); valueType
    case "avg" =>
      valueType.fields.foreach { f =>
        if (!f.dataType.isNumeric) throw new SharedStateException(
          s"Fetch rule 'avg' needs numeric columns (BIGINT, INT, DOUBLE, FLOAT); column '${f.name}' is ${f.dataType.sql}.")
      }
      ValueType(valueType.fields.map(f => Field(f.name, FieldType.DoubleType)))
    case "collect" =>
      if (valueType.size != 1 || valueType(0).isInstanceOf[FieldType.ArrayType] || valueType(0).isInstanceOf[
          FieldType.Opaque]) {
        throw new SharedStateException(
          s"Fetch rule 'collect' needs a value of one scalar column; the value is <${valueType.ddl}>.")
      }
      ValueType.of(valueType.fields(0).name -> FieldType.ArrayType(valueType(0)))
    case other => throw new SharedStateException(s"Unknown aggregate '$other'. Supported: ${Functions.mkString(", ")}.")
  }

  def lowerBound(t: Long): Long = from

  def answer(set: ValueSet, t: Long): FetchAnswer = {
    val (a, b) = if (set == null || from > t) (0, 0) else (set.firstIndexAtOrAfter(from), set.latestIndex(t) + 1)
    // The pairs in range, without a transaction's deletes (rare: only then is a filtered copy made).
    val range = a until math.max(a, b)
    val live: IndexedSeq[Int] = if (range.exists(set.isDeleted)) range.filterNot(set.isDeleted) else range
    function match {
      case "count" =>
        val w = new BinaryRowWriter(1)
        w.setLong(0, live.size.toLong)
        FetchAnswer.Aggregate(w.toBytes, resultType, emptyRange = live.isEmpty)
      case "collect" =>
        val values = live.map(i => BinaryRow.decode(valueType, set.valueAt(i))(0)).toArray
        val w = new BinaryRowWriter(1)
        w.setArray(0, valueType(0), values, valueType.fields(0).name)
        FetchAnswer.Aggregate(w.toBytes, resultType, emptyRange = live.isEmpty)
      case _ if live.isEmpty => FetchAnswer.Absent
      case "avg" => FetchAnswer.Aggregate(average(set, live), resultType)
      case f =>
        val op = if (f == "sum") NumericOp.Sum else if (f == "min") NumericOp.Min else NumericOp.Max
        var acc = set.valueAt(live(0))
        var i = 1
        while (i < live.size) { acc = NumericRule.combine(valueType, row, op, acc, set.valueAt(live(i))); i += 1 }
        FetchAnswer.Aggregate(acc, resultType)
    }
  }

  private def average(set: ValueSet, live: IndexedSeq[Int]): Array[Byte] = {
    val sums = new Array[Double](valueType.size)
    val counts = new Array[Long](valueType.size)
    live.foreach { i =>
      val v = set.valueAt(i)
      var c = 0
      while (c < valueType.size) {
        if (!row.isNull(v, 0, c)) {
          sums(c) += (valueType(c) match {
            case FieldType.LongType => row.getLong(v, 0, c).toDouble
            case FieldType.IntType => row.getInt(v, 0, c).toDouble
            case FieldType.DoubleType => row.getDouble(v, 0, c)
            case _ => row.getFloat(v, 0, c).toDouble
          })
          counts(c) += 1
        }
        c += 1
      }
    }
    val w = new BinaryRowWriter(valueType.size)
    (0 until valueType.size).foreach(c => if (counts(c) == 0) w.setNull(c) else w.setDouble(c, sums(c) / counts(c)))
    w.toBytes
  }
}

object RangeAggregate {
  val Functions: Seq[String] = Seq("sum", "count", "min", "max", "avg", "collect")
}
