package io.sharedstate.spark

import io.sharedstate.core.FetchAnswer
import org.apache.spark.sql.catalyst.InternalRow
import org.apache.spark.sql.catalyst.expressions.{GenericInternalRow, SpecializedGetters}
import org.apache.spark.sql.catalyst.util.GenericArrayData
import org.apache.spark.sql.types.DataType

/**
 * [[FetchAnswerCells]] in Spark's internal form, for the fetch join's operator, which works on
 * internal rows: the cells of an answer are written into a row at an offset, straight from the
 * stored UnsafeRow bytes (no external objects; timestamps stay microseconds).
 */
final class InternalAnswerCells(spec: FetchJoinSpec) {
  private val schemas = spec.schemas
  // Getters made once per column: InternalRow.get(i, type) looks the type up (and, in a task, rebuilds
  // the session conf) on every call, which cost a quarter of a fetch join's CPU.
  private val valueTypes: Array[Getter] = getters(schemas.value.fields.map(_.dataType))
  private val aggregateTypes: Array[Getter] = spec.rule match {
    case a: FetchJoinRule.Aggregate => getters(a.resultSchema(schemas).fields.map(_.dataType))
    case _ => Array.empty
  }

  val width: Int = spec.rule.addedColumns(schemas).length

  /** Writes nulls into `row` at [offset, offset + width). */
  def nulls(row: GenericInternalRow, offset: Int): Unit = {
    var i = 0
    while (i < width) { row.setNullAt(offset + i); i += 1 }
  }

  /** Writes the cells of `answer` into `row` at `offset`; false when the fetch found nothing (unmatched). */
  def write(answer: FetchAnswer, row: GenericInternalRow, offset: Int): Boolean = answer match {
    case FetchAnswer.Absent => nulls(row, offset); false
    case FetchAnswer.Found(t, bytes) =>
      copy(StoredRows.wrap(bytes, valueTypes.length), valueTypes, row, offset)
      row.update(offset + valueTypes.length, t)
      true
    case p: FetchAnswer.Pairs =>
      val pairs = new Array[Any](p.size)
      var i = 0
      while (i < p.size) {
        val pair = new GenericInternalRow(1 + valueTypes.length)
        pair.update(0, p.times(i))
        copy(StoredRows.wrap(p.values(i), valueTypes.length), valueTypes, pair, 1)
        pairs(i) = pair
        i += 1
      }
      row.update(offset, new GenericArrayData(pairs))
      p.size > 0
    case FetchAnswer.Aggregate(bytes, rowType) =>
      val result = StoredRows.wrap(bytes, rowType.size)
      copy(result, aggregateTypes, row, offset)
      !isEmptyRange(result)
    case FetchAnswer.NotYet => throw new IllegalStateException("a fetch that is not answerable yet has no cells")
  }

  // count and collect answer an empty range with 0 and []; the join treats that like no value.
  private def isEmptyRange(result: InternalRow): Boolean = spec.rule.name match {
    case "count" => result.getLong(0) == 0L
    case "collect" => result.getArray(0).numElements() == 0
    case _ => false
  }

  private def copy(from: InternalRow, columns: Array[Getter], to: GenericInternalRow, offset: Int): Unit = {
    var i = 0
    while (i < columns.length) {
      if (from == null || from.isNullAt(i)) to.setNullAt(offset + i) else to.update(offset + i, columns(i)(from, i))
      i += 1
    }
  }

  private type Getter = (SpecializedGetters, Int) => Any

  private def getters(types: Array[DataType]): Array[Getter] = types.map(InternalRow.getAccessor(_, nullable = false))
}
